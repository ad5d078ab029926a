// Package pathcheck tells whether a path lies inside a directory, the way
// an operator's target directory must be checked against a server's data
// directory: absolute, symbolic links resolved, also for paths that do not
// exist yet. Used by the online backup and by oja wal salvage.
package pathcheck

import (
	"path/filepath"
	"strings"
)

// Within reports whether path is dir or lies inside it, once both are
// absolute and their existing parts' symbolic links resolved (a path that
// does not exist yet is resolved through its longest existing ancestor).
func Within(path, dir string) (bool, error) {
	p, err := resolvedPath(path)
	if err != nil {
		return false, err
	}
	d, err := resolvedPath(dir)
	if err != nil {
		return false, err
	}
	rel, err := filepath.Rel(d, p)
	if err != nil {
		return false, nil
	}
	return rel == "." || rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)), nil
}

func resolvedPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if parent := filepath.Dir(p); parent == p {
			return abs, nil
		} else {
			rest = append([]string{filepath.Base(p)}, rest...)
		}
	}
}
