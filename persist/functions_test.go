package persist

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/clock"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/shard"
)

// fakeFunctions is the function libraries as the saver sees them: a
// payload and its version.
type fakeFunctions struct {
	mu       sync.Mutex
	version  uint64
	payload  string
	replaced []string // what restores gave it
	fail     error    // ReplaceFunctions's answer
}

func (f *fakeFunctions) set(payload string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	f.payload = payload
}

func (f *fakeFunctions) FunctionsVersion() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

func (f *fakeFunctions) DumpFunctions() (uint64, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, []byte(f.payload)
}

func (f *fakeFunctions) ReplaceFunctions(p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.replaced = append(f.replaced, string(p))
	f.version++
	f.payload = string(p)
	return nil
}

// countingStore counts the function records applied.
type countingStore struct {
	Store
	mu  sync.Mutex
	fns int
}

func (s *countingStore) Apply(puts []Record, deletes [][]byte) error {
	s.mu.Lock()
	for _, r := range puts {
		if r.Kind == KindFunctions {
			s.fns++
		}
	}
	s.mu.Unlock()
	return s.Store.Apply(puts, deletes)
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fns
}

// saverWith starts a saver over store with fns, the clock at saverT0.
func saverWith(t *testing.T, store Store, fns Functions, logf func(string, ...any)) (*Saver, *shard.Store) {
	t.Helper()
	keys := shard.New(shard.Options{Shards: 4, TrackChanges: true})
	c := clock.New()
	c.Set(saverT0)
	s, err := NewSaver(store, keys, c, SaverOptions{Interval: time.Hour, Logger: logf, Functions: fns})
	if err != nil {
		t.Fatalf("NewSaver: %v", err)
	}
	return s, keys
}

// TestSaverFunctions: the function libraries are written by the flush
// after they change (once), kept by a rewrite, restored at start; a
// keyspace key named as their record's, put and deleted, is a key's
// record and leaves them alone; libraries that do not load are skipped
// and logged, the keys restored.
func TestSaverFunctions(t *testing.T) {
	if engine.Kind(KindFunctions).New() != nil {
		t.Fatalf("kind %d is an engine kind: the function record's kind must be no other's", KindFunctions)
	}
	dir := t.TempDir()
	db, err := Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	st := &countingStore{Store: db}
	fns := &fakeFunctions{}
	s, keys := saverWith(t, st, fns, t.Logf)
	tokenTake(keys, functionsKey, saverT0, saverParams, 10)
	tokenTake(keys, []byte("other"), saverT0, saverParams, 5)
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	if st.count() != 0 {
		t.Fatalf("%d function records written before any change", st.count())
	}
	fns.set("libraries v1")
	for range 3 {
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
	}
	if st.count() != 1 {
		t.Fatalf("%d function records written for one change, want 1", st.count())
	}
	deleteKey(keys, functionsKey, saverT0)
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(true); err != nil { // a rewrite: the log written since is folded
		t.Fatal(err)
	}
	if st.count() != 2 {
		t.Fatalf("%d function records written with the rewrite, want 2", st.count())
	}

	db, err = Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	fns2 := &fakeFunctions{}
	s, keys = saverWith(t, db, fns2, t.Logf)
	if !slices.Equal(fns2.replaced, []string{"libraries v1"}) {
		t.Fatalf("restored libraries %q, want [libraries v1]", fns2.replaced)
	}
	if _, _, ok := liveState(keys, functionsKey, saverT0); ok {
		t.Fatal("the deleted key named functions came back")
	}
	if _, _, ok := liveState(keys, []byte("other"), saverT0); !ok {
		t.Fatal("key other was not restored")
	}
	fns2.set("") // FUNCTION FLUSH: written as no libraries
	if err := s.Shutdown(true); err != nil {
		t.Fatal(err)
	}

	db, err = Open(&Options{Dir: dir, Logger: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedLines{}
	fns3 := &fakeFunctions{fail: errors.New("ERR Missing library metadata")}
	s, keys = saverWith(t, db, fns3, logs.logf)
	defer s.Shutdown(false)
	if !strings.Contains(logs.String(), "skipped the function libraries, which do not load: ERR Missing library metadata") {
		t.Fatalf("the libraries that do not load were not logged:\n%s", logs)
	}
	if s.skipped != 1 {
		t.Fatalf("skipped %d, want 1", s.skipped)
	}
	if _, _, ok := liveState(keys, []byte("other"), saverT0); !ok {
		t.Fatal("key other was not restored beside libraries that do not load")
	}
}

// TestSaverFunctionsRewrittenAfterLoss: libraries whose record a failed
// write lost are written again by the rewrite that follows.
func TestSaverFunctionsRewrittenAfterLoss(t *testing.T) {
	mem := NewMemStore()
	flaky := &flakyStore{Store: mem, fail: []int{1}}
	fns := &fakeFunctions{}
	s, _ := saverWith(t, flaky, fns, t.Logf)
	defer s.Shutdown(false)
	fns.set("v1")
	if err := s.Save(); err == nil {
		t.Fatal("Save succeeded with Apply failing")
	}
	for range 3 {
		if err := s.Save(); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := loadAll(t, mem, saverT0)
	if len(recs) != 1 || recs[0].Kind != KindFunctions || string(recs[0].Payload) != "v1" {
		t.Fatalf("stored %+v, want the libraries v1", recs)
	}
}
