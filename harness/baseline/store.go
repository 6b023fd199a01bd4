package baseline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/fixtures/baselines"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Store is a set of baselines with unique profile names.
type Store struct {
	baselines []*Baseline // sorted by profile name
}

// Load reads every *.yaml in dir; errors name the files as dir/name.yaml.
func Load(dir string) (*Store, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reading baselines: %w", err)
	}
	return load(os.DirFS(dir), ".", func(name string) string { return filepath.Join(dir, name) })
}

// LoadFS reads every *.yaml in dir of fsys; errors name the files by
// their path in fsys.
func LoadFS(fsys fs.FS, dir string) (*Store, error) {
	return load(fsys, dir, func(name string) string { return path.Join(dir, name) })
}

// Shipped loads the baselines shipped with gdrcheck (fixtures/baselines,
// embedded); errors name them by their path in the source tree.
func Shipped() (*Store, error) {
	return load(baselines.FS, ".", func(name string) string { return path.Join("fixtures/baselines", name) })
}

func load(fsys fs.FS, dir string, display func(name string) string) (*Store, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading baselines from %q: %w", display(""), err)
	}
	var bs []*Baseline
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := bounded.ReadFileFS(fsys, path.Join(dir, e.Name()), FileLimit)
		if err != nil {
			errs = append(errs, fmt.Errorf("reading baseline %q: %w", display(e.Name()), err))
			continue
		}
		b, err := Parse(display(e.Name()), data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bs = append(bs, b)
	}
	if len(bs) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("reading baselines from %q: no *.yaml files", display(""))
	}
	s, err := NewStore(bs...)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// NewStore makes a store of baselines, checking that their profile names
// are unique.
func NewStore(bs ...*Baseline) (*Store, error) {
	s := &Store{baselines: slices.Clone(bs)}
	slices.SortStableFunc(s.baselines, func(a, b *Baseline) int {
		return strings.Compare(a.Profile.Name, b.Profile.Name)
	})
	var errs []error
	for i := 1; i < len(s.baselines); i++ {
		a, b := s.baselines[i-1], s.baselines[i]
		if a.Profile.Name == b.Profile.Name {
			errs = append(errs, &SchemaError{File: b.File, Line: b.nameLine, Field: "profile.name",
				Msg: fmt.Sprintf("%q is also the profile of %s", b.Profile.Name, a.at())})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// at names where a baseline's profile is defined: file:line.
func (b *Baseline) at() string {
	if b.File == "" {
		return "a recorded baseline"
	}
	if b.nameLine > 0 {
		return fmt.Sprintf("%s:%d", b.File, b.nameLine)
	}
	return b.File
}

// Baselines returns the baselines, sorted by profile name.
func (s *Store) Baselines() []*Baseline { return slices.Clone(s.baselines) }

// Profiles returns the profiles, sorted by name, for `baseline show`.
func (s *Store) Profiles() []Profile {
	ps := make([]Profile, len(s.baselines))
	for i, b := range s.baselines {
		ps[i] = b.Profile
	}
	return ps
}

// Get returns the baseline of a profile.
func (s *Store) Get(name string) (*Baseline, bool) {
	for _, b := range s.baselines {
		if b.Profile.Name == name {
			return b, true
		}
	}
	return nil, false
}
