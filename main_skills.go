package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// skillsFlags are the reference server's -skills flags: the skills
// extension (skills_catalog.go) serving a folder.
type skillsFlags struct {
	dir    string
	rescan time.Duration // Unlimited: never
}

// defaultSkillsRescan is -skills-rescan's default.
const defaultSkillsRescan = 10 * time.Second

// register adds the flags to fs.
func (f *skillsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "skills", "", "serve the skills in this `DIR` (the skills extension; each skill a folder with a SKILL.md, e.g. testdata/skills)")
	optionVar(fs, &f.rescan, "skills-rescan", defaultSkillsRescan, "with -skills, look for added, changed and removed skills on this period (unlimited: only at start and when skills/get names a new one)", Unlimited)
}

// check refuses a -skills that is not a directory, and -skills-rescan
// without -skills.
func (f *skillsFlags) check(set map[string]bool) error {
	if f.dir == "" {
		if set["skills-rescan"] {
			return errors.New("-skills-rescan needs -skills")
		}
		return nil
	}
	if info, err := os.Stat(f.dir); err != nil || !info.IsDir() {
		return fmt.Errorf("-skills: %s is not a readable directory", f.dir)
	}
	return nil
}

// start serves the skills of the -skills folder on rt, through an os.Root
// so that no path leaves it, and rescans it on the -skills-rescan period
// until the returned stop is called. Without -skills it does nothing.
func (f *skillsFlags) start(rt *Runtime, logger *slog.Logger) (stop func(), err error) {
	if f.dir == "" {
		return func() {}, nil
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, fmt.Errorf("-skills: %w", err)
	}
	skills, err := rt.AddSkills(root.FS(), SkillsOptions{})
	if err != nil {
		root.Close()
		return nil, err
	}
	logger.Info("mcpstdio: serving skills", "dir", f.dir, "skills", skills.Len())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f.rescan == Unlimited {
			<-ctx.Done()
			return
		}
		tick := time.NewTicker(f.rescan)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				skills.Rescan()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		root.Close()
	}, nil
}
