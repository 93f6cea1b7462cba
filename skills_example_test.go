package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log"
	"path/filepath"
	"strings"
	"testing"
)

//go:embed testdata/skills
var exampleSkills embed.FS

// Skills embedded in the binary: an embed.FS (here the example skills of
// testdata/skills) is served as a folder on disk is.
func ExampleRuntime_AddSkills() {
	rt, err := NewRuntime(RuntimeOptions{ServerInfo: Implementation{Name: "skilled", Version: "1.0.0"}})
	if err != nil {
		log.Fatal(err)
	}
	// region skills
	folder, err := fs.Sub(exampleSkills, "testdata/skills") // an embed.FS; or os.OpenRoot(dir) and its FS()
	if err != nil {
		log.Fatal(err)
	}
	skills, err := rt.AddSkills(folder, SkillsOptions{})
	if err != nil {
		log.Fatal(err)
	}
	// endregion skills
	fmt.Println(skills.Len(), "skills")
	tr, client, err := NewMemoryTransport(rt, Options{})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	served := make(chan error, 1)
	go func() { served <- tr.Serve(ctx) }()
	client.Send(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"skills/get","params":{"uri":"skill://tutorials/first-call/SKILL.md",`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	answer, err := client.Receive(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var res struct {
		Result struct {
			Skill struct {
				Frontmatter struct{ Name string }
				Resources   []struct{ URI, Digest string }
			}
		}
	}
	json.Unmarshal(answer, &res)
	fmt.Println(res.Result.Skill.Frontmatter.Name, res.Result.Skill.Resources[0].URI, strings.HasPrefix(res.Result.Skill.Resources[0].Digest, "sha256:"))
	client.Close()
	fmt.Println(<-served)
	// Output:
	// 2 skills
	// first-call skill://tutorials/first-call/SKILL.md true
	// <nil>
}

// TestSkillsListenStream: a skill added to the folder reaches a 2026 listen
// stream that asked for resource list changes, tagged with its id.
func TestSkillsListenStream(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "one", "SKILL.md"), skillMD("one", "First"))
	opts := testOptions()
	opts.ResourcesListChanged = true
	rt, s, _ := newSkillsRuntime(t, rootFS(t, root), opts, SkillsOptions{})
	client, done := startMemory(t, rt, Options{})
	ctx := context.Background()
	if err := client.Send(ctx, []byte(`{"jsonrpc":"2.0","id":"listen","method":"subscriptions/listen","params":{"notifications":{"resourcesListChanged":true},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)); err != nil {
		t.Fatal(err)
	}
	if ack, err := client.Receive(ctx); err != nil || !strings.Contains(string(ack), "notifications/subscriptions/acknowledged") {
		t.Fatalf("acknowledgement %s, %v", ack, err)
	}
	writeFile(t, filepath.Join(root, "two", "SKILL.md"), skillMD("two", "Second"))
	if n := s.Rescan(); n != 2 {
		t.Fatalf("Rescan = %d", n)
	}
	got, err := client.Receive(ctx)
	if want := `{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"listen"}}}`; err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
	client.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
