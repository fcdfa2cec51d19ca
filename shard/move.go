package shard

import (
	"encoding/binary"
	"sync"

	"github.com/rlserver/rlserver/cluster"
)

// A cluster slot moving to another node: the source streams the slots'
// states (SnapshotSlotsRaw, FilterRaw), freezes them so that no command
// changes them any more (Freeze), and drops them once they are the other
// node's (DropSlots); the importing node applies them (Shard.Apply).

var freezeMu sync.Mutex // serialises Freeze and Thaw

// Freeze adds slots to those whose keys no command changes: an update of
// such a key ends with Moving, and changes nothing. When Freeze returns,
// every update that began before it has ended (each shard's lock was
// taken after the set was in place), so the change stream holds every
// change the slots will ever have here.
func (s *Store) Freeze(slots *cluster.SlotSet) {
	freezeMu.Lock()
	defer freezeMu.Unlock()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		next := new(cluster.SlotSet)
		if sh.frozen != nil {
			*next = *sh.frozen
		}
		for w := range next {
			next[w] |= slots[w]
		}
		sh.frozen = next
		sh.Unlock()
	}
}

// Thaw removes slots from the frozen ones.
func (s *Store) Thaw(slots *cluster.SlotSet) {
	freezeMu.Lock()
	defer freezeMu.Unlock()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		if sh.frozen != nil {
			next, any := new(cluster.SlotSet), false
			for w := range next {
				next[w] = sh.frozen[w] &^ slots[w]
				any = any || next[w] != 0
			}
			sh.frozen = nil
			if any {
				sh.frozen = next
			}
		}
		sh.Unlock()
	}
}

// frozenKey reports whether key's slot is frozen. The caller holds the lock.
func (sh *Shard) frozenKey(key []byte) bool {
	return sh.frozen != nil && sh.frozen.Has(cluster.Slot(key))
}

// DropSlots removes every key of slots, as deletions in the change stream
// (replicas and persistence follow), and returns how many it removed.
func (s *Store) DropSlots(slots *cluster.SlotSet) int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.Lock()
		var gone [][]byte
		sh.each(minInt64, func(it Item) bool {
			if slots.Has(cluster.Slot(it.Key)) {
				gone = append(gone, append([]byte(nil), it.Key...))
			}
			return true
		})
		for _, k := range gone {
			h := sh.hash.bytes(k)
			if f := sh.lookup(k, h); f.OK {
				sh.removeAt(f.pos, f.ref, EventDelete)
				n++
			}
		}
		sh.Unlock()
	}
	return n
}

// SnapshotSlotsRaw is SnapshotRaw for the keys of slots only.
func (f *Feed) SnapshotSlotsRaw(i int, now int64, slots *cluster.SlotSet, buf []byte) ([]byte, uint64) {
	sh := &f.s.shards[i]
	sh.Lock()
	defer sh.Unlock()
	sh.each(now, func(it Item) bool {
		if !slots.Has(cluster.Slot(it.Key)) {
			return true
		}
		payload := sh.encoded(sh.slabs.get(it.ref), it.ExpireAt)
		buf = append(entryHead(buf, EventPut, it.Kind, it.ExpireAt, len(it.Key), len(payload)), it.Key...)
		buf = append(buf, payload...)
		return true
	})
	f.pos[i] = sh.feed.head
	return buf, f.pos[i]
}

// FilterRaw appends to dst the entries of raw stream bytes (as ReadRaw
// returns them) whose key is in slots, and the flushes.
func FilterRaw(dst, raw []byte, slots *cluster.SlotSet) []byte {
	for len(raw) >= entryHeader {
		size := 4 + int(binary.LittleEndian.Uint32(raw))
		e := raw[:size]
		keep := Event(e[4]) == EventFlush
		if !keep {
			kl, n := binary.Uvarint(e[entryHeader:])
			key := e[entryHeader+n : entryHeader+n+int(kl)]
			keep = slots.Has(cluster.Slot(key))
		}
		if keep {
			dst = append(dst, e...)
		}
		raw = raw[size:]
	}
	return dst
}
