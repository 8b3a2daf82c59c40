package apitest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorFuncs(t *testing.T) {
	dir := t.TempDir()
	src := `package p

type T struct{}
type g[X any] struct{}
type G[X any] struct{}

func A() error                 { return nil }
func B() (int, error)          { return 0, nil }
func c() error                 { return nil }
func D() int                   { return 0 }
func (T) M() error             { return nil }
func (*T) N() (bool, error)    { return false, nil }
func (g[X]) M() error          { return nil }
func (G[X]) M() error          { return nil }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\nfunc E() error { return nil }\n"), 0o644))
	got, err := ErrorFuncs(dir)
	require.NoError(t, err)
	want := []string{"A", "B", "G.M", "T.M", "T.N"}
	assert.True(t, slices.Equal(got, want), "ErrorFuncs = %v, want %v", got, want)
	_, err = ErrorFuncs(filepath.Join(dir, "missing"))
	assert.Error(t, err, "a missing directory gave no error")
}
