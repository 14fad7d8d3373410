package refharness

import "sync/atomic"

// Resource shapes on the wire. Optional fields the protocol lists are always
// rendered (null when unset) so clients see a stable shape. Values are treated
// as immutable once stored: a change stores a modified copy.

// Envelope is the common resource envelope.
type Envelope struct {
	ID        string         `json:"id"`
	Object    string         `json:"object"`
	CreatedAt string         `json:"created_at"`
	UpdatedAt string         `json:"updated_at"`
	Metadata  map[string]any `json:"metadata"`
}

// Workspace is the isolation boundary for sessions and tasks.
type Workspace struct {
	Envelope
	Name            string   `json:"name"`
	Root            string   `json:"root"`
	DefaultBranchID *string  `json:"default_branch_id"`
	Capabilities    []string `json:"capabilities"`
	QuotaID         *string  `json:"quota_id"`
}

// Transcript summarises a session's message history.
type Transcript struct {
	MessageCount  int     `json:"message_count"`
	TurnCount     int     `json:"turn_count"`
	LastMessageID *string `json:"last_message_id"`
}

// Session is a conversational continuity boundary.
type Session struct {
	Envelope
	WorkspaceID     string     `json:"workspace_id"`
	State           string     `json:"state"`
	Transcript      Transcript `json:"transcript"`
	PersonaID       *string    `json:"persona_id"`
	RootSessionID   *string    `json:"root_session_id"`
	ParentSessionID *string    `json:"parent_session_id"`
	BranchID        *string    `json:"branch_id"`
	LastEventID     *string    `json:"last_event_id"`
	Summary         *string    `json:"summary"`
	ExpiresAt       *string    `json:"expires_at"`
}

// Failure describes why a task failed.
type Failure struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// Task is a unit of agent work.
type Task struct {
	Envelope
	SessionID       string   `json:"session_id"`
	WorkspaceID     string   `json:"workspace_id"`
	Status          string   `json:"status"`
	Input           any      `json:"input"`
	CreatedBy       string   `json:"created_by"`
	PersonaID       *string  `json:"persona_id"`
	BranchID        *string  `json:"branch_id"`
	ParentTaskID    *string  `json:"parent_task_id"`
	AssignedAgentID *string  `json:"assigned_agent_id"`
	ReceiptID       *string  `json:"receipt_id"`
	OutcomeID       *string  `json:"outcome_id"`
	QuotaID         *string  `json:"quota_id"`
	StartedAt       *string  `json:"started_at"`
	CompletedAt     *string  `json:"completed_at"`
	CanceledAt      *string  `json:"canceled_at"`
	Failure         *Failure `json:"failure"`
}

// Message is a conversational turn.
type Message struct {
	Envelope
	SessionID *string          `json:"session_id"`
	TaskID    *string          `json:"task_id"`
	Role      string           `json:"role"`
	Parts     []map[string]any `json:"parts"`

	indexLate bool // added to its Session's transcript by a second write (FaultTranscriptIndexedLate); not rendered or journaled
}

// Artifact is durable non-prompt content; its bytes are served by /content.
type Artifact struct {
	Envelope
	Kind        string  `json:"kind"`
	MimeType    string  `json:"mime_type"`
	URI         *string `json:"uri"`
	Visibility  string  `json:"visibility"`
	SHA256      *string `json:"sha256"`
	SizeBytes   *int64  `json:"size_bytes"`
	WorkspaceID *string `json:"workspace_id"`
	SessionID   *string `json:"session_id"`
	TaskID      *string `json:"task_id"`
	ReceiptID   *string `json:"receipt_id"`
	BranchID    *string `json:"branch_id"` // the Branch it was made on (EXT-BRANCH-002; branches.go)
}

// Outcome is the terminal user-visible result of a task.
type Outcome struct {
	Envelope
	TaskID    string      `json:"task_id"`
	Status    string      `json:"status"`
	Summary   string      `json:"summary"`
	Artifacts []*Artifact `json:"artifacts"`
	ReceiptID *string     `json:"receipt_id"`
	Failure   *Failure    `json:"failure"`
}

// Persona is a durable operational role.
type Persona struct {
	Envelope
	Name          string   `json:"name"`
	Version       string   `json:"version"`
	EntryWorkflow string   `json:"entry_workflow"`
	Description   string   `json:"description"`
	AutonomyTier  string   `json:"autonomy_tier"`
	ReceiptPolicy string   `json:"receipt_policy"`
	Tools         []string `json:"tools"`        // granted tools ("*": all); personas.go
	Capabilities  []string `json:"capabilities"` // granted capabilities ("*": all)
	QuotaID       *string  `json:"quota_id"`
}

// Skill is a callable capability.
type Skill struct {
	Envelope
	Name             string         `json:"name"`
	Description      string         `json:"description"`
	InputSchema      map[string]any `json:"input_schema"`
	OutputSchema     map[string]any `json:"output_schema"`
	Source           *string        `json:"source"`
	Version          *string        `json:"version"`
	RequiresApproval bool           `json:"requires_approval"`
	Deprecated       bool           `json:"deprecated"`
}

// Pointer names a resource.
type Pointer struct {
	Object string `json:"object"`
	ID     string `json:"id"`
}

// Event is an append-only fact about a resource.
type Event struct {
	Envelope
	Event           string         `json:"event"`
	Resource        Pointer        `json:"resource"`
	Sequence        int64          `json:"sequence"`
	Payload         map[string]any `json:"payload"`
	SessionID       *string        `json:"session_id"`
	TaskID          *string        `json:"task_id"`
	WorkspaceID     *string        `json:"workspace_id"`
	Actor           *string        `json:"actor"`
	IdempotencyKey  *string        `json:"idempotency_key"`
	PreviousEventID *string        `json:"previous_event_id"`
	ReceiptID       *string        `json:"receipt_id"`
	Replayed        bool           `json:"replayed"`
	// Replay is the replay metadata of an event a replay produced
	// (replay.go); absent on every other event.
	Replay *ReplayMeta `json:"replay,omitempty"`
	// TraceID and SpanID correlate a tool call's events (hostev.go); only
	// those carry them, so they are left out, not null, elsewhere.
	TraceID *string `json:"trace_id,omitempty"`
	SpanID  *string `json:"span_id,omitempty"`

	pos  uint64                 // global position, parsed from ID
	wire atomic.Pointer[[]byte] // rendered JSON, cached: a stream fan-out renders each event once
}

// List is the paginated list envelope.
type List struct {
	Object string `json:"object"`
	Data   []any  `json:"data"`
	Page   Page   `json:"page"`
}

// Page is the pagination block of a list.
type Page struct {
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

func ptr[T any](v T) *T { return &v }

// Task statuses.
const (
	StatusSubmitted     = "SUBMITTED"
	StatusWorking       = "WORKING"
	StatusInputRequired = "INPUT_REQUIRED"
	StatusAuthRequired  = "AUTH_REQUIRED"
	StatusCompleted     = "COMPLETED"
	StatusFailed        = "FAILED"
	StatusCanceled      = "CANCELED"
)

// transitions is the spec's task state table.
var transitions = map[string][]string{
	StatusSubmitted:     {StatusWorking, StatusCanceled, StatusFailed},
	StatusWorking:       {StatusInputRequired, StatusAuthRequired, StatusCompleted, StatusFailed, StatusCanceled},
	StatusInputRequired: {StatusWorking, StatusFailed, StatusCanceled},
	StatusAuthRequired:  {StatusWorking, StatusFailed, StatusCanceled},
}

// Allowed reports whether the spec permits a task to move from one status to another.
func Allowed(from, to string) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// Terminal reports whether a task status is final.
func Terminal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCanceled
}

// transitionEvent names the task event that records a move into status.
func transitionEvent(from, to string) string {
	switch to {
	case StatusWorking:
		if from == StatusSubmitted {
			return "task.started"
		}
		return "task.status_changed"
	case StatusInputRequired:
		return "task.input_required"
	case StatusAuthRequired:
		return "task.auth_required"
	case StatusCompleted:
		return "task.completed"
	case StatusFailed:
		return "task.failed"
	case StatusCanceled:
		return "task.canceled"
	}
	return "task.status_changed"
}
