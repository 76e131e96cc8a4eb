// Package lsp is kgen's language server for spec files (`kgen lsp`): the
// diagnostics gen gives, from the unsaved buffer as the user types, with
// ranges; hover over formula names, functions and the kernel; completion of
// functions, names in scope and spec keys; go to definition; and
// formatting through kgen fmt's formatter. Every fact it shows comes from
// the table that decides it (funcs.Table, the spec schema, ir's formula
// checker), so new functions and fields show up without touching it.
package lsp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/kgen-dev/kgen/internal/version"
)

// Options configure a server.
type Options struct {
	// Log receives notes for the user (stderr for `kgen lsp`).
	Log io.Writer
	// Config is the kgen.yaml every spec is checked under (`kgen --config
	// PATH lsp`); "" finds each spec's own by walking up from its folder.
	Config string
}

// Serve runs the server over r and w (stdin and stdout for `kgen lsp`)
// until the client sends exit or closes r. It returns nil after shutdown
// then exit, as LSP wants for exit code 0.
func Serve(r io.Reader, w io.Writer, opts Options) error {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Config != "" {
		abs, err := filepath.Abs(opts.Config)
		if err != nil {
			return err
		}
		opts.Config = abs
	}
	s := &server{conn: newConn(r, w), log: opts.Log, config: opts.Config, docs: map[string]*document{}, disk: newDiskSpecs()}
	return s.loop()
}

type server struct {
	conn         *conn
	log          io.Writer
	config       string               // Options.Config
	docs         map[string]*document // open documents by URI
	disk         *diskSpecs           // the other specs of a config, for cross-file checks
	initialized  bool
	shuttingDown bool
}

// document is one open spec buffer.
type document struct {
	uri, file string // file: absolute path, "" when the URI is not a file
	version   int
	text      string
	a         *analysis // of text; nil until needed
}

func (s *server) loop() error {
	for {
		m, err := s.conn.read()
		if errors.Is(err, io.EOF) {
			if s.shuttingDown {
				return nil
			}
			return errors.New("the client closed the connection without shutdown")
		}
		if err != nil {
			return err
		}
		if m.Error != nil && m.Method == "" && m.ID == nil { // not JSON
			s.conn.reply(nil, nil, m.Error)
			continue
		}
		if m.Method == "" {
			continue // a response: the server sends no requests
		}
		if m.Method == "exit" {
			if s.shuttingDown {
				return nil
			}
			return errors.New("exit without shutdown")
		}
		result, err := s.safeHandle(m)
		if m.ID != nil {
			if err := s.conn.reply(m.ID, result, err); err != nil {
				return err
			}
		} else if err != nil {
			fmt.Fprintf(s.log, "kgen lsp: %s: %v\n", m.Method, err)
		}
	}
}

// safeHandle is handle, with a panic turned into an error answer: a bug
// met on one buffer must not take the editor's server down with it.
func (s *server) safeHandle(m *message) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(s.log, "kgen lsp: internal error in %s: %v\n%s", m.Method, r, debug.Stack())
			result, err = nil, &rpcError{Code: codeInternalError, Message: fmt.Sprintf("kgen lsp internal error: %v", r)}
		}
	}()
	return s.handle(m)
}

// handle answers one request or notification.
func (s *server) handle(m *message) (any, error) {
	if !s.initialized && m.Method != "initialize" {
		if m.ID == nil {
			return nil, nil // notifications before initialize are dropped
		}
		return nil, &rpcError{Code: codeNotInitialized, Message: "initialize first"}
	}
	switch m.Method {
	case "initialize":
		s.initialized = true
		return s.initialize(), nil
	case "initialized", "$/setTrace", "$/cancelRequest", "workspace/didChangeConfiguration", "workspace/didChangeWatchedFiles":
		return nil, nil
	case "shutdown":
		s.shuttingDown = true
		return nil, nil
	case "textDocument/didOpen":
		var p didOpenParams
		return nil, s.withParams(m, &p, func() error { return s.open(p) })
	case "textDocument/didChange":
		var p didChangeParams
		return nil, s.withParams(m, &p, func() error { return s.change(p) })
	case "textDocument/didSave":
		var p didSaveParams
		return nil, s.withParams(m, &p, func() error { return s.save(p) })
	case "textDocument/didClose":
		var p didCloseParams
		return nil, s.withParams(m, &p, func() error { return s.close(p) })
	case "textDocument/hover":
		return positionRequest(s, m, s.hover)
	case "textDocument/completion":
		return positionRequest(s, m, s.complete)
	case "textDocument/definition":
		return positionRequest(s, m, s.definition)
	case "textDocument/formatting":
		var p documentFormattingParams
		var edits []TextEdit
		err := s.withParams(m, &p, func() (err error) {
			edits, err = s.format(p.TextDocument.URI)
			return err
		})
		return edits, err
	}
	if m.ID == nil || strings.HasPrefix(m.Method, "$/") {
		return nil, nil
	}
	return nil, &rpcError{Code: codeMethodNotFound, Message: "kgen lsp does not implement " + m.Method}
}

// withParams decodes m's params into p, then runs f.
func (s *server) withParams(m *message, p any, f func() error) error {
	if err := json.Unmarshal(m.Params, p); err != nil {
		return &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	return f()
}

// positionRequest decodes a request at a position in an open document and
// answers it with f over the document's analysis.
func positionRequest[T any](s *server, m *message, f func(a *analysis, pos Position) T) (any, error) {
	var p textDocumentPositionParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	d := s.docs[p.TextDocument.URI]
	if d == nil || s.analysis(d).notSpec {
		return nil, nil
	}
	return f(s.analysis(d), p.Position), nil
}

func (s *server) initialize() initializeResult {
	var r initializeResult
	r.ServerInfo.Name, r.ServerInfo.Version = "kgen", version.Version
	r.Capabilities = map[string]any{
		// Full text on every change: a spec is small, and the analysis
		// reads it whole anyway.
		"textDocumentSync":           map[string]any{"openClose": true, "change": 1, "save": map[string]any{"includeText": true}},
		"hoverProvider":              true,
		"definitionProvider":         true,
		"documentFormattingProvider": true,
		"completionProvider":         map[string]any{"triggerCharacters": []string{"(", " ", ","}},
	}
	return r
}

func (s *server) open(p didOpenParams) error {
	td := p.TextDocument
	s.docs[td.URI] = &document{uri: td.URI, file: uriFile(td.URI), version: td.Version, text: td.Text}
	return s.publish(s.docs[td.URI])
}

func (s *server) change(p didChangeParams) error {
	d := s.docs[p.TextDocument.URI]
	if d == nil || len(p.ContentChanges) == 0 {
		return nil
	}
	last := p.ContentChanges[len(p.ContentChanges)-1]
	if last.Range != nil {
		return errors.New("incremental change received; kgen lsp asked for full document sync")
	}
	d.text, d.version, d.a = last.Text, p.TextDocument.Version, nil
	return s.publish(d)
}

func (s *server) save(p didSaveParams) error {
	d := s.docs[p.TextDocument.URI]
	if d == nil {
		return nil
	}
	if p.Text != nil {
		d.text = *p.Text
	}
	d.a = nil // the other specs on disk may have changed too
	return s.publish(d)
}

func (s *server) close(p didCloseParams) error {
	delete(s.docs, p.TextDocument.URI)
	return s.conn.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []Diagnostic{}})
}

// publish sends d's diagnostics, then those of the other open specs of its
// config, which may change with it (a kernel name two specs share).
func (s *server) publish(d *document) error {
	if err := s.publishOne(d); err != nil {
		return err
	}
	cfg := s.analysis(d).cfg
	if cfg == nil {
		return nil
	}
	for _, o := range s.docs {
		if o != d && o.a != nil && o.a.cfg != nil && o.a.cfg.Path == cfg.Path {
			o.a = nil
			if err := s.publishOne(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishOne sends d's diagnostics; an empty list clears the client's.
func (s *server) publishOne(d *document) error {
	a := s.analysis(d)
	v := d.version
	return s.conn.notify("textDocument/publishDiagnostics", publishDiagnosticsParams{URI: d.uri, Version: &v, Diagnostics: a.lspDiagnostics()})
}

// analysis is d's analysis, computed once per text.
func (s *server) analysis(d *document) *analysis {
	if d.a == nil {
		d.a = analyze(d.file, d.text, env{open: s.openText, disk: s.disk, config: s.config})
		d.a.uri = d.uri
	}
	return d.a
}

// openText is the buffer of the open document for file, if any: the other
// specs' kernel names are read from unsaved buffers before the disk.
func (s *server) openText(file string) (string, bool) {
	for _, d := range s.docs {
		if d.file == file && file != "" {
			return d.text, true
		}
	}
	return "", false
}

// uriFile is the local path of a file: URI, or "" for other schemes.
func uriFile(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return ""
	}
	p := u.Path
	if runtime.GOOS == "windows" { // file:///C:/x → C:/x
		p = strings.TrimPrefix(p, "/")
	}
	return filepath.FromSlash(p)
}
