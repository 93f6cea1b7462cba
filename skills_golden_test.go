package main

import "os"

// registerSkillsGoldenCatalog is the reference catalog with the skills of
// testdata/skills, as `go run . -skills testdata/skills` serves them: the
// catalog of the golden transcripts named skills_*.
func registerSkillsGoldenCatalog(rt *Runtime) error {
	if err := registerReferenceCatalog(rt); err != nil {
		return err
	}
	_, err := rt.AddSkills(os.DirFS("testdata/skills"), SkillsOptions{})
	return err
}
