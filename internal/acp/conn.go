package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/redact"
)

// Limits of one agent connection. Each is a bound on what a hostile or
// broken agent can make the checker hold, never a protocol rule: hitting one
// is the checker giving up (an error verdict), not a failure of the agent.
const (
	DefaultMaxMessage = 4 << 20   // bytes of one line the agent writes
	DefaultMaxOutput  = 256 << 20 // bytes the agent may write to stdout in all
	DefaultGrace      = 500 * time.Millisecond
	DefaultWrite      = 5 * time.Second // one write to the agent's stdin

	maxKept       = 10000 // notifications and requests kept for waiters
	maxProblems   = 200
	maxExchanges  = 100
	framesHead    = 25
	framesTail    = 25
	maxFrameBytes = 2 << 10
	maxBodyBytes  = 8 << 10
	stderrHead    = 4 << 10
	stderrTail    = 12 << 10
)

// Options configures Start.
type Options struct {
	// Command is the agent: the program and its arguments. It is run
	// directly (no shell), in a process group of its own on Unix.
	Command []string
	// Env is added to conform's own environment; Dir is the working
	// directory ("" = conform's).
	Env []string
	Dir string
	// MaxMessage and MaxOutput bound one line and all of stdout
	// (0 = the defaults); Grace is how long Close waits for the agent to
	// exit on its own after its stdin is closed; Write bounds each write
	// to its stdin.
	MaxMessage int
	MaxOutput  int64
	Grace      time.Duration
	Write      time.Duration
	// Redactor scrubs secrets from everything recorded (nil: nothing).
	Redactor *redact.Redactor
	// Handle answers the agent's requests to the client (nil:
	// DefaultHandler). It runs on the reader goroutine and must not block.
	Handle func(Message) (any, *RPCError)
}

// Conn is a running agent and the client side of its JSON-RPC connection.
// Its methods are safe for concurrent use.
type Conn struct {
	opts  Options
	red   *redact.Redactor
	prog  string
	cmd   *exec.Cmd
	stdin *os.File
	out   *os.File
	errR  *os.File

	writeMu sync.Mutex

	mu        sync.Mutex
	nextID    int64
	pending   map[string]*call
	order     []*call         // pending calls, oldest first
	abandoned map[string]bool // ids of calls given up on (timed out)
	received  []Message
	dropped   int
	changed   chan struct{} // closed and replaced whenever received grows or the reader ends
	problems  []Problem
	probDrop  int
	ex        []*record
	exDrop    int
	proc      *record // lines outside any call, stderr and the exit
	stderr    headTail
	readErr   error
	closed    bool

	readDone chan struct{}
	errDone  chan struct{}
	exited   chan struct{}
	exitErr  error
	started  time.Time
}

type call struct {
	method string
	rec    *record
	ch     chan *Response
	start  time.Time
}

// Response is an agent's answer to a Call.
type Response struct {
	Message
	// Problems are the ways the response line itself broke JSON-RPC 2.0
	// (also kept in Conn.Problems).
	Problems []Problem
	Duration time.Duration
	// Mark is the position (Conn.Mark) at which the response arrived:
	// messages from Mark on came after it.
	Mark int
}

// Err returns the response's error object as an error, or nil.
func (r *Response) Err() error {
	if r == nil || r.Error == nil {
		return nil
	}
	return r.Error
}

// Start runs the agent. Its error means the command could not be started
// (not found, not executable): the user's to fix, never a verdict.
func Start(ctx context.Context, opts Options) (*Conn, error) {
	if len(opts.Command) == 0 || opts.Command[0] == "" {
		return nil, errors.New("acp: no agent command")
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Write <= 0 {
		opts.Write = DefaultWrite
	}
	if opts.Handle == nil {
		opts.Handle = DefaultHandler
	}
	red := opts.Redactor
	if red == nil {
		red = redact.New()
	}
	path, err := exec.LookPath(opts.Command[0])
	if err != nil {
		return nil, fmt.Errorf("acp: agent command %q: %w", filepath.Base(opts.Command[0]), err)
	}
	cmd := exec.Command(path, opts.Command[1:]...)
	cmd.Dir = opts.Dir
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	ownGroup(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := ctx.Err(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("acp: starting the agent %q: %w", filepath.Base(path), err)
	}
	// The child holds its own copies of these ends.
	closeAll(inR, outW, errW)
	c := &Conn{
		opts: opts, red: red, prog: filepath.Base(path), cmd: cmd, stdin: inW, out: outR, errR: errR,
		pending: map[string]*call{}, abandoned: map[string]bool{}, changed: make(chan struct{}),
		readDone: make(chan struct{}), errDone: make(chan struct{}), exited: make(chan struct{}),
		started: time.Now(),
	}
	c.stderr = headTail{head: stderrHead, tail: stderrTail}
	c.proc = &record{ex: client.Exchange{Kind: KindStdio, Op: "agent process", Method: "EXEC", URL: c.url(), Started: c.started}}
	go c.read()
	go c.readStderr()
	go func() {
		c.exitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// KindStdio is the transcript kind of an exchange with an agent over its
// standard streams.
const KindStdio = "stdio"

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// url names the agent in transcripts: the program's base name only, since
// its arguments may hold credentials.
func (c *Conn) url() string { return "stdio:" + c.prog }

// Program is the agent program's base name.
func (c *Conn) Program() string { return c.prog }

// DefaultHandler answers the requests an agent may send its client when the
// client advertised no file-system or terminal capability: a permission
// request gets a reject option when one is offered (the checker grants
// nothing), else the cancelled outcome; everything else is Method not found.
// The answers are the SDK's types, as its own client would send them.
func DefaultHandler(m Message) (any, *RPCError) {
	if m.Method != sdk.ClientMethodSessionRequestPermission {
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "Method not found: " + m.Method, CodeOK: true}
	}
	var p sdk.RequestPermissionRequest
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error(), CodeOK: true}
	}
	for _, o := range p.Options {
		if o.Kind == sdk.PermissionOptionKindRejectOnce || o.Kind == sdk.PermissionOptionKindRejectAlways {
			return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
		}
	}
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
}

// Call sends a request and waits for its response until ctx ends. A
// *client.TransportError means no response could be had (the agent is
// gone, did not answer in time, or could not be written to): the checker
// cannot judge that, so it is an error verdict, never a failure.
func (c *Conn) Call(ctx context.Context, method string, params any) (*Response, error) {
	pc, err := c.Send(method, params)
	if err != nil {
		return nil, err
	}
	return pc.Wait(ctx)
}

// Pending is a request sent and not yet answered.
type Pending struct {
	c   *Conn
	key string
	cl  *call
}

// Send writes a request and returns at once; Wait gets its response.
// Requests are written in the order Send is called.
func (c *Conn) Send(method string, params any) (*Pending, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, c.transportErr(method, errors.New("the connection is closed"))
	}
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	line, err := marshalLine(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("acp: encoding %s: %w", method, err)
	}
	cl := &call{method: method, ch: make(chan *Response, 1), start: time.Now()}
	cl.rec = &record{ex: client.Exchange{Kind: KindStdio, Op: method, Method: method, URL: c.url(),
		RequestBody: bound(c.red.Bytes(line[:len(line)-1]), maxBodyBytes), Started: cl.start}}
	key := strconv.FormatInt(id, 10)
	c.mu.Lock()
	c.pending[key] = cl
	c.order = append(c.order, cl)
	c.addRecord(cl.rec)
	c.mu.Unlock()
	if err := c.write(line); err != nil {
		c.forget(key, cl, err)
		return nil, c.transportErr(method, err)
	}
	return &Pending{c: c, key: key, cl: cl}, nil
}

// Done reports whether the response has arrived (Wait then returns it
// at once).
func (p *Pending) Done() bool { return len(p.cl.ch) > 0 }

// Wait waits for the response until ctx ends (see Call). Call it once.
func (p *Pending) Wait(ctx context.Context) (*Response, error) {
	c, cl, key := p.c, p.cl, p.key
	select {
	case r := <-cl.ch:
		return r, nil
	case <-ctx.Done():
		err := fmt.Errorf("no response within the deadline: %w", context.Cause(ctx))
		c.forget(key, cl, err)
		return nil, c.transportErr(cl.method, err)
	case <-c.readDone:
		// The response may have arrived just before stdout ended.
		select {
		case r := <-cl.ch:
			return r, nil
		default:
		}
		err := c.gone()
		c.forget(key, cl, err)
		return nil, c.transportErr(cl.method, err)
	}
}

// Notify sends a notification (no response expected).
func (c *Conn) Notify(method string, params any) error {
	line, err := marshalLine(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		return fmt.Errorf("acp: encoding %s: %w", method, err)
	}
	c.mu.Lock()
	c.frame("→", line[:len(line)-1])
	c.mu.Unlock()
	if err := c.write(line); err != nil {
		return c.transportErr(method, err)
	}
	return nil
}

func marshalLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // one line: the encoder never indents and escapes newlines in strings
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (c *Conn) write(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	// A pipe's write end takes deadlines: an agent that stops reading
	// its stdin cannot block the checker.
	_ = c.stdin.SetWriteDeadline(time.Now().Add(c.opts.Write))
	_, err := c.stdin.Write(line)
	return err
}

func (c *Conn) forget(key string, cl *call, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[key] == cl {
		delete(c.pending, key)
		c.dropOrder(cl)
		if len(c.abandoned) < maxKept {
			c.abandoned[key] = true
		}
	}
	if cl.rec.ex.Error == "" {
		cl.rec.ex.Error = c.red.String(err.Error())
	}
	cl.rec.ex.DurationMS = ms(time.Since(cl.start))
}

func (c *Conn) dropOrder(cl *call) {
	for i, o := range c.order {
		if o == cl {
			c.order = append(c.order[:i], c.order[i+1:]...)
			return
		}
	}
}

// gone says why stdout ended.
func (c *Conn) gone() error {
	c.mu.Lock()
	err := c.readErr
	c.mu.Unlock()
	if err == nil {
		err = errors.New("the agent closed its stdout")
	}
	select {
	case <-c.exited:
		return fmt.Errorf("%w (the agent exited: %s)", err, exitText(c.exitErr))
	default:
	}
	return err
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func (c *Conn) transportErr(method string, err error) error {
	return &client.TransportError{Method: method, URL: c.url(), Err: err}
}

// read is the one reader of the agent's stdout: bounded lines, each decoded,
// responses handed to their calls, requests answered, notifications kept.
func (c *Conn) read() {
	defer func() {
		c.mu.Lock()
		c.broadcast()
		c.mu.Unlock()
		close(c.readDone)
	}()
	br := bufio.NewReaderSize(c.out, 64<<10)
	var total int64
	for {
		line, over, err := readLine(br, c.opts.MaxMessage)
		total += int64(len(line))
		if over > 0 {
			total += over
			c.mu.Lock()
			c.addProblem(Problem{Message: fmt.Sprintf("the agent wrote a line of %d bytes, more than this checker's limit of %d: the line was skipped", int64(len(line))+over, c.opts.MaxMessage)})
			c.frame("←", append(line[:min(len(line), 200)], "…[line over the limit, skipped]"...))
			c.mu.Unlock()
		} else if len(line) > 0 || err == nil {
			c.handleLine(line)
		}
		if total > c.opts.MaxOutput {
			c.mu.Lock()
			c.readErr = fmt.Errorf("the agent wrote more than %d bytes to stdout: the checker stopped reading and ended it", c.opts.MaxOutput)
			c.mu.Unlock()
			c.kill()
			return
		}
		if err != nil {
			c.mu.Lock()
			if !errors.Is(err, io.EOF) && !c.closed {
				c.readErr = fmt.Errorf("reading the agent's stdout: %w", err)
			}
			c.mu.Unlock()
			return
		}
	}
}

// readLine reads up to a newline, keeping at most limit bytes; over is how
// many bytes past the limit were discarded. A final line without a newline
// is returned with io.EOF.
func readLine(br *bufio.Reader, limit int) (line []byte, over int64, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if room := limit - len(line); room > 0 {
			line = append(line, chunk[:min(len(chunk), room)]...)
			if len(chunk) > room {
				over += int64(len(chunk) - room)
			}
		} else {
			over += int64(len(chunk))
		}
		switch {
		case err == nil:
			if over > 0 {
				return line, over, nil
			}
			return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), 0, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, over, err
		}
	}
}

func (c *Conn) handleLine(line []byte) {
	line = bytes.Clone(line)
	m, probs, err := Decode(line)
	c.mu.Lock()
	for _, p := range probs {
		c.addProblem(p)
	}
	if err != nil {
		c.frame("←", line)
		c.mu.Unlock()
		return
	}
	switch m.Kind {
	case KindResponse:
		cl := c.pending[m.IDKey]
		if cl == nil && c.abandoned[m.IDKey] {
			// A late answer to a request the client stopped waiting for:
			// it names a request that was sent, so it breaks nothing.
			delete(c.abandoned, m.IDKey)
			c.frame("←", append(bytes.Clone(line), " (late: the client had stopped waiting)"...))
			c.mu.Unlock()
			return
		}
		if cl == nil {
			c.addProblem(Problem{Req: ReqResponse, Message: fmt.Sprintf("a response whose id %s names no request the client has pending", clip(string(m.ID), 40)), Line: clip(string(line), 400)})
			c.frame("←", line)
			c.mu.Unlock()
			return
		}
		delete(c.pending, m.IDKey)
		c.dropOrder(cl)
		d := time.Since(cl.start)
		cl.rec.ex.ResponseBody = bound(c.red.Bytes(line), maxBodyBytes)
		cl.rec.ex.BodyTruncated = len(line) > maxBodyBytes
		cl.rec.ex.DurationMS = ms(d)
		if m.Error != nil {
			cl.rec.ex.Status = int(m.Error.Code)
		}
		mark := len(c.received) + c.dropped
		c.mu.Unlock()
		cl.ch <- &Response{Message: m, Problems: probs, Duration: d, Mark: mark}
		return
	case KindRequest:
		c.frame("←", line)
		c.keep(m)
		c.mu.Unlock()
		result, rpcErr := c.opts.Handle(m)
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		if rpcErr != nil {
			e := map[string]any{"code": rpcErr.Code, "message": rpcErr.Message}
			if len(rpcErr.Data) > 0 {
				e["data"] = rpcErr.Data
			}
			reply["error"] = e
		} else {
			reply["result"] = result
		}
		out, err := marshalLine(reply)
		if err != nil {
			return
		}
		c.mu.Lock()
		c.frame("→", out[:len(out)-1])
		c.mu.Unlock()
		_ = c.write(out) // a failed write shows as the agent's missing progress
		return
	default:
		c.frame("←", line)
		c.keep(m)
		c.mu.Unlock()
	}
}

// keep stores an incoming notification or request for waiters. c.mu held.
func (c *Conn) keep(m Message) {
	if len(c.received) >= maxKept {
		c.dropped++
		return
	}
	c.received = append(c.received, m)
	c.broadcast()
}

func (c *Conn) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *Conn) addProblem(p Problem) {
	p.Message = c.red.String(p.Message)
	p.Line = c.red.String(p.Line)
	if len(c.problems) >= maxProblems {
		c.probDrop++
		return
	}
	c.problems = append(c.problems, p)
}

// Problems returns every protocol deviation seen so far (a copy), and how
// many more were not kept.
func (c *Conn) Problems() ([]Problem, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Problem(nil), c.problems...), c.probDrop
}

// Mark is the number of messages (notifications and agent requests)
// received so far: a position to wait from.
func (c *Conn) Mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.received) + c.dropped
}

// Received returns the notifications and agent requests received from
// position from on.
func (c *Conn) Received(from int) []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	from -= c.dropped
	if from < 0 {
		from = 0
	}
	if from >= len(c.received) {
		return nil
	}
	return append([]Message(nil), c.received[from:]...)
}

// ErrNoMessage is returned by Wait when no message matched before its
// deadline or before the agent's stdout ended.
var ErrNoMessage = errors.New("no matching message")

// Wait returns the first message from position from on that match
// accepts, waiting until ctx ends or the agent's stdout ends; it returns
// the position after the match. Its error wraps ErrNoMessage.
func (c *Conn) Wait(ctx context.Context, from int, match func(Message) bool) (Message, int, error) {
	for {
		c.mu.Lock()
		start := max(from-c.dropped, 0)
		for i := start; i < len(c.received); i++ {
			if match(c.received[i]) {
				m := c.received[i]
				c.mu.Unlock()
				return m, i + 1 + c.dropped, nil
			}
		}
		from = len(c.received) + c.dropped
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Message{}, from, fmt.Errorf("%w: %v", ErrNoMessage, context.Cause(ctx))
		case <-c.readDone:
			// Look once more: the last messages may have come with the end.
			c.mu.Lock()
			n := len(c.received) + c.dropped
			c.mu.Unlock()
			if n > from {
				continue
			}
			return Message{}, from, fmt.Errorf("%w: %v", ErrNoMessage, c.gone())
		}
	}
}

func (c *Conn) readStderr() {
	defer close(c.errDone)
	buf := make([]byte, 8<<10)
	for {
		n, err := c.errR.Read(buf)
		if n > 0 {
			c.mu.Lock()
			c.stderr.Write(buf[:n])
			c.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// Stderr returns what the agent wrote to its stderr so far: the first
// and the last few KiB, redacted.
func (c *Conn) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.red.String(c.stderr.String())
}

// Done is closed when the agent's stdout has ended.
func (c *Conn) Done() <-chan struct{} { return c.readDone }

// Exited is closed when the agent process has exited.
func (c *Conn) Exited() <-chan struct{} { return c.exited }

// Close ends the agent: its stdin is closed (an ACP agent ends on EOF),
// after the grace period its process group is killed, and the pipes are
// closed. It never waits longer than the grace period plus a few seconds,
// whatever the agent does.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.writeMu.Lock()
	c.stdin.Close()
	c.writeMu.Unlock()
	t := time.NewTimer(c.opts.Grace)
	select {
	case <-c.exited:
	case <-t.C:
	}
	t.Stop()
	// Whatever it started goes too: the group outlives its leader.
	c.kill()
	bounded(c.exited, 5*time.Second)
	// Closing our read ends unblocks the readers even when a stray
	// process still holds the write ends.
	c.out.Close()
	c.errR.Close()
	bounded(c.readDone, 5*time.Second)
	bounded(c.errDone, 5*time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, cl := range c.pending {
		delete(c.pending, key)
		c.abandoned[key] = true
		if cl.rec.ex.Error == "" {
			cl.rec.ex.Error = "no response: the connection was closed"
		}
	}
	c.order = nil
	select {
	case <-c.exited:
		c.proc.ex.Error = "agent exit: " + exitText(c.exitErr)
	default:
		c.proc.ex.Error = "the agent did not exit after SIGKILL within 5s"
	}
	c.proc.ex.DurationMS = ms(time.Since(c.started))
	return nil
}

func bounded(ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// Exchanges returns the transcript: one exchange per call (its request,
// its response, and the messages that came and went while it was
// pending), then the agent process itself (lines outside any call, its
// stderr, how it ended). Everything is redacted and bounded.
func (c *Conn) Exchanges() ([]client.Exchange, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]client.Exchange, 0, len(c.ex)+1)
	for _, r := range c.ex {
		out = append(out, r.snapshot())
	}
	p := c.proc.snapshot()
	p.ResponseBody = bound(c.red.String(c.stderr.String()), maxBodyBytes)
	if c.dropped > 0 {
		p.Frames = append(p.Frames, fmt.Sprintf("(%d notifications past the first %d were not kept for checks)", c.dropped, maxKept))
	}
	out = append(out, p)
	return out, c.exDrop
}

// addRecord adds a call's exchange to the transcript. c.mu held.
func (c *Conn) addRecord(r *record) {
	if len(c.ex) >= maxExchanges {
		c.exDrop++
		r.dropped = true
		return
	}
	c.ex = append(c.ex, r)
}

// frame records a line outside a response: on the oldest pending call's
// exchange (the one it most likely belongs to), else on the process's.
// c.mu held.
func (c *Conn) frame(dir string, line []byte) {
	r, start := c.proc, c.started
	if len(c.order) > 0 && !c.order[0].rec.dropped {
		r, start = c.order[0].rec, c.order[0].start
	}
	r.add(fmt.Sprintf("%s +%dms %s", dir, time.Since(start).Milliseconds(), bound(c.red.Bytes(line), maxFrameBytes)))
}

// record is one exchange of the transcript with its frames bounded: the
// first framesHead and the last framesTail are kept.
type record struct {
	ex      client.Exchange
	tail    []string
	next    int
	dropped bool
}

func (r *record) add(f string) {
	switch {
	case len(r.ex.Frames) < framesHead:
		r.ex.Frames = append(r.ex.Frames, f)
	case len(r.tail) < framesTail:
		r.tail = append(r.tail, f)
	default:
		r.tail[r.next] = f
		r.next = (r.next + 1) % framesTail
		r.ex.FramesDropped++
	}
}

func (r *record) snapshot() client.Exchange {
	e := r.ex
	e.Frames = append([]string(nil), r.ex.Frames...)
	if r.ex.FramesDropped > 0 {
		e.Frames = append(e.Frames, fmt.Sprintf("… %d messages not shown …", r.ex.FramesDropped))
	}
	e.Frames = append(e.Frames, r.tail[r.next:]...)
	e.Frames = append(e.Frames, r.tail[:r.next]...)
	return e
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return clip(s, n) + "[truncated]"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// headTail keeps the first head and the last tail bytes written to it.
type headTail struct {
	head, tail int
	first      []byte
	last       []byte
	skipped    int64
}

func (h *headTail) Write(p []byte) {
	if room := h.head - len(h.first); room > 0 {
		n := min(room, len(p))
		h.first = append(h.first, p[:n]...)
		p = p[n:]
	}
	if len(p) == 0 {
		return
	}
	h.last = append(h.last, p...)
	if over := len(h.last) - h.tail; over > 0 {
		h.skipped += int64(over)
		h.last = append(h.last[:0], h.last[over:]...)
	}
}

func (h *headTail) String() string {
	if h.skipped == 0 {
		return string(h.first) + string(h.last)
	}
	return string(h.first) + fmt.Sprintf("\n… %d bytes not shown …\n", h.skipped) + string(h.last)
}
