package shard

import "github.com/rlserver/rlserver/cluster"

// SlotShard returns the shard holding the keys of a hash slot (cluster
// mode, Options.Cluster).
func (s *Store) SlotShard(slot int) *Shard { return &s.shards[uint64(slot)&s.mask] }

// CountKeysInSlot returns how many keys hash to slot, as CLUSTER
// COUNTKEYSINSLOT (like DBSIZE, keys whose state became fresh count until
// they are removed). Cluster mode only; it locks the slot's shard unless
// the view holds every lock (EXEC).
func (v View) CountKeysInSlot(slot int) int {
	sh := v.s.SlotShard(slot)
	v.lock(sh)
	defer v.unlock(sh)
	if sh.slotKeys == nil {
		return 0
	}
	return int(*sh.slotCount(slot))
}

// slotCount is the count of keys of slot, one of the shard's.
func (sh *Shard) slotCount(slot int) *uint32 { return &sh.slotKeys[slot>>sh.slotBits] }

// KeysInSlot returns up to count live keys of slot (CLUSTER
// GETKEYSINSLOT), reading only the slot's shard, and none of it when the
// slot holds no key. Cluster mode only; it locks the slot's shard unless
// the view holds every lock (EXEC).
func (v View) KeysInSlot(slot, count int, now int64) []string {
	sh := v.s.SlotShard(slot)
	v.lock(sh)
	defer v.unlock(sh)
	if sh.slotKeys == nil || *sh.slotCount(slot) == 0 || count <= 0 {
		return nil
	}
	var keys []string
	left := int(*sh.slotCount(slot))
	sh.each(minInt64, func(it Item) bool {
		if cluster.Slot(it.Key) != slot {
			return true
		}
		left--
		if it.ExpireAt > now {
			keys = append(keys, string(it.Key))
		}
		return len(keys) < count && left > 0
	})
	return keys
}
