package pathcheck

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWithin(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(filepath.Join(data, "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{
		{data, true},
		{filepath.Join(data, "store"), true},
		{filepath.Join(data, "new", "deeper"), true}, // does not exist yet
		{filepath.Join(link, "backup"), true},        // through a symbolic link
		{filepath.Join(data, "..", "data", "x"), true},
		{filepath.Join(root, "data-2"), false}, // a name that only starts alike
		{filepath.Join(root, "elsewhere"), false},
		{root, false},
	} {
		got, err := Within(tc.path, data)
		if err != nil || got != tc.want {
			t.Errorf("Within(%s, data) = %v, %v; want %v", tc.path, got, err, tc.want)
		}
	}
}
