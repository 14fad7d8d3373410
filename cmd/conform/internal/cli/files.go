package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// FileCommand is an offline command of one subcommand over files
// (`conform receipt verify`, `conform card verify`, `conform openharness
// validate`): the same dispatch, help, usage errors and argument order for
// each.
type FileCommand struct {
	Command    string          // "conform receipt"
	Subcommand string          // "verify"
	Usage      func(io.Writer) // the usage text and flags
}

// Args checks the subcommand and answers help. It returns the
// subcommand's arguments, or done with the exit code: ExitOK after help,
// ExitError for a missing or unknown subcommand.
func (c FileCommand) Args(args []string, stdout, stderr io.Writer) (rest []string, code int, done bool) {
	switch {
	case len(args) == 0:
		fmt.Fprintf(stderr, "%s: missing subcommand (want %s)\n\n", c.Command, c.Subcommand)
		c.Usage(stderr)
		return nil, ExitError, true
	case IsHelp(args[0]):
		c.Usage(stdout)
		return nil, ExitOK, true
	case args[0] != c.Subcommand:
		fmt.Fprintf(stderr, "%s: %s (want %s)\n", c.Command, UnknownCommand("subcommand", args[0], []string{c.Subcommand}), c.Subcommand)
		return nil, ExitError, true
	case AsksHelp(args[1:]):
		c.Usage(stdout)
		return nil, ExitOK, true
	}
	return args[1:], 0, false
}

// UsageError reports a bad command line, with where the usage is, and
// returns ExitError.
func (c FileCommand) UsageError(stderr io.Writer, err error) int {
	name := c.Command + " " + c.Subcommand
	fmt.Fprintf(stderr, "%s: %v\n(%s -h shows the usage)\n", name, err, name)
	return ExitError
}

// ParseArgs parses fs's flags and positional arguments in any order;
// everything after "--" is positional.
func ParseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos, tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, FlagError(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return append(pos, tail...), nil
}

// ParseFiles is ParseArgs for a command whose positional arguments are
// its input files, at least one. what names them for the error when there
// are none ("receipt": "no receipt files given").
func ParseFiles(fs *flag.FlagSet, args []string, what string) ([]string, error) {
	files, err := ParseArgs(fs, args)
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no %s files given (use - for stdin)", what)
	}
	return files, err
}

// OneStdin fails when "-" (standard input) is among paths more than once.
func OneStdin(paths ...string) error {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	if n > 1 {
		return errors.New(`"-" (stdin) given more than once`)
	}
	return nil
}

// ErrTooLarge is what ReadFile's error for an input over its limit is.
var ErrTooLarge = errors.New("input too large")

type tooLargeError struct {
	name  string
	limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %d bytes, refusing to read further", e.name, e.limit)
}

func (e *tooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ReadFile reads one input file ("-": stdin) of at most limit bytes,
// failing (never truncating) beyond; a directory is an error. Every error
// names the file.
func ReadFile(path string, stdin io.Reader, limit int64) ([]byte, error) {
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("<stdin>: no standard input")
		}
		return readBounded(stdin, DisplayName(path), limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err // already names the file
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	return readBounded(f, path, limit)
}

func readBounded(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if int64(len(b)) > limit {
		return nil, &tooLargeError{name, limit}
	}
	return b, nil
}

// DisplayName is how reports name an input file: "<stdin>" for "-".
func DisplayName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}
