package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

// TestA2ATaskStoreBounds: whatever is added, the store keeps at most
// TaskMax tasks and TaskMaxBytes bytes, the newest; a task is read only by
// its owner and only within its TTL.
func TestA2ATaskStoreBounds(t *testing.T) {
	now := time.Date(2026, 11, 29, 5, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	add := func(st *a2aTaskStore, i int, owner string, size int64) a2a.TaskID {
		id := a2a.TaskID(fmt.Sprintf("t-%d", i))
		st.add(&a2aTask{owner: owner, task: &a2a.Task{ID: id}, size: size})
		return id
	}
	tests := []struct {
		name      string
		opts      A2AOptions
		n         int
		size      int64
		wantCount int
	}{
		{"count bound", A2AOptions{TaskMax: 10, TaskMaxBytes: 1 << 30}, 1000, 100, 10},
		{"byte bound", A2AOptions{TaskMax: 1000, TaskMaxBytes: 1 << 20}, 1000, 136 << 10, 7},
		{"both within bounds", A2AOptions{TaskMax: 100, TaskMaxBytes: 1 << 20}, 50, 1000, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newA2ATaskStore(tt.opts, clock)
			var ids []a2a.TaskID
			for i := range tt.n {
				ids = append(ids, add(st, i, "k", tt.size))
			}
			count, bytes := st.stats()
			if count != tt.wantCount || bytes != int64(count)*tt.size || bytes > tt.opts.TaskMaxBytes {
				t.Fatalf("kept %d tasks of %d bytes, want %d within %d bytes", count, bytes, tt.wantCount, tt.opts.TaskMaxBytes)
			}
			for i, id := range ids {
				if _, _, _, ok := st.get("k", id); ok != (i >= tt.n-tt.wantCount) {
					t.Errorf("task %d kept %v, want only the newest %d", i, ok, tt.wantCount)
				}
			}
		})
	}

	t.Run("resize past the byte bound drops the oldest", func(t *testing.T) {
		st := newA2ATaskStore(A2AOptions{TaskMaxBytes: 1 << 20}, clock)
		first := add(st, 0, "k", 100)
		second := add(st, 1, "k", 100)
		st.resize("k", second, 1<<20)
		if _, _, _, ok := st.get("k", first); ok {
			t.Error("the oldest task survived a resize past the bound")
		}
		if _, bytes := st.stats(); bytes != 1<<20 {
			t.Errorf("bytes %d, want %d", bytes, 1<<20)
		}
	})

	t.Run("owner and ttl", func(t *testing.T) {
		st := newA2ATaskStore(A2AOptions{TaskTTL: time.Minute}, func() time.Time { return now })
		id := add(st, 0, "key:a", 10)
		if _, _, _, ok := st.get("key:b", id); ok {
			t.Error("another owner read the task")
		}
		if _, ok := st.update("key:b", id, func(*a2a.Task, *a2aTask) bool { return true }); ok {
			t.Error("another owner changed the task")
		}
		if got := st.list("key:b"); len(got) != 0 {
			t.Errorf("another owner listed %d tasks", len(got))
		}
		if _, _, _, ok := st.get("key:a", id); !ok {
			t.Fatal("the owner cannot read its task")
		}
		now = now.Add(time.Minute)
		if _, _, _, ok := st.get("key:a", id); ok {
			t.Error("the task is read past its TTL")
		}
		if count, bytes := st.stats(); count != 0 || bytes != 0 {
			t.Errorf("an expired task is still kept: %d tasks, %d bytes", count, bytes)
		}
	})
}
