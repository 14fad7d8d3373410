package receipt

// FindSecrets walks any decoded JSON document, not only a receipt, and
// returns one message per place that holds secret material: a member whose
// name says it is a credential (access_token, client_secret, private_key,
// …) with a value that is not a redaction marker, a private JSON Web Key,
// or a string shaped like a credential (a PEM private key, a bearer token,
// a JWT, …). Messages name the JSON pointer and the rule, never the value.
// The Extended level's vault checks read resources and events with it.
func FindSecrets(doc any) []string { return findSecrets(doc) }
