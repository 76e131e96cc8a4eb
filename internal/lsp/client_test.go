package lsp

import (
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testClient drives a server in this process over pipes, speaking the
// same framing as an editor.
type testClient struct {
	t      *testing.T
	c      *conn
	nextID int
	msgs   chan *message
	notes  []*message // notifications read while waiting for a response
	done   chan error
}

func startClient(t *testing.T) *testClient { t.Helper(); return startClientWith(t, Options{}) }

func startClientWith(t *testing.T, opts Options) *testClient {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	tc := &testClient{t: t, c: newConn(toClient, fromClient), msgs: make(chan *message, 64), done: make(chan error, 1)}
	go func() {
		err := Serve(toServer, fromServer, opts)
		fromServer.Close()
		tc.done <- err
	}()
	go func() {
		for {
			m, err := tc.c.read()
			if err != nil {
				close(tc.msgs)
				return
			}
			tc.msgs <- m
		}
	}()
	t.Cleanup(func() { fromClient.Close() })
	var init initializeResult
	tc.request("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, &init)
	if init.ServerInfo.Name != "kgen" {
		t.Fatalf("initialize: server %q, want kgen", init.ServerInfo.Name)
	}
	tc.notify("initialized", map[string]any{})
	return tc
}

// next is the next message from the server, failing after a while.
func (tc *testClient) next() *message {
	tc.t.Helper()
	select {
	case m, ok := <-tc.msgs:
		if !ok {
			tc.t.Fatal("the server closed the connection")
		}
		return m
	case <-time.After(20 * time.Second):
		tc.t.Fatal("no message from the server in 20s")
	}
	return nil
}

func (tc *testClient) notify(method string, params any) {
	tc.t.Helper()
	if err := tc.c.notify(method, params); err != nil {
		tc.t.Fatal(err)
	}
}

// request sends a request and decodes its result into result.
func (tc *testClient) request(method string, params any, result any) {
	tc.t.Helper()
	tc.nextID++
	id := json.RawMessage(jsonInt(tc.nextID))
	if err := tc.c.write(map[string]any{"jsonrpc": "2.0", "id": &id, "method": method, "params": params}); err != nil {
		tc.t.Fatal(err)
	}
	for {
		m := tc.next()
		if m.Method != "" {
			tc.notes = append(tc.notes, m)
			continue
		}
		if m.ID == nil || string(*m.ID) != string(id) {
			tc.t.Fatalf("%s: response to id %s, want %s", method, string(*m.ID), string(id))
		}
		if m.Error != nil {
			tc.t.Fatalf("%s: %v", method, m.Error)
		}
		if result != nil {
			if err := json.Unmarshal(m.Result, result); err != nil {
				tc.t.Fatalf("%s: %v in %s", method, err, m.Result)
			}
		}
		return
	}
}

func jsonInt(n int) []byte { b, _ := json.Marshal(n); return b }

// diagnostics waits for the next publishDiagnostics for uri.
func (tc *testClient) diagnostics(uri string) []Diagnostic {
	tc.t.Helper()
	for {
		var m *message
		if len(tc.notes) > 0 {
			m, tc.notes = tc.notes[0], tc.notes[1:]
		} else {
			m = tc.next()
		}
		if m.Method != "textDocument/publishDiagnostics" {
			continue
		}
		var p publishDiagnosticsParams
		if err := json.Unmarshal(m.Params, &p); err != nil {
			tc.t.Fatal(err)
		}
		if p.URI == uri {
			return p.Diagnostics
		}
	}
}

// shutdown ends the session as an editor does and checks the server
// exits cleanly.
func (tc *testClient) shutdown() {
	tc.t.Helper()
	tc.request("shutdown", nil, nil)
	tc.notify("exit", nil)
	select {
	case err := <-tc.done:
		if err != nil {
			tc.t.Fatalf("server: %v", err)
		}
	case <-time.After(20 * time.Second):
		tc.t.Fatal("the server did not exit")
	}
}

// project writes kgen.yaml and the given specs (name → text) into a new
// folder and returns it.
func project(t *testing.T, specs map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kgen.yaml"), []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, text := range specs {
		p := filepath.Join(dir, "specs", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fileURI is the file: URI of an absolute path, as an editor sends it.
func fileURI(file string) string {
	p := filepath.ToSlash(file)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}
