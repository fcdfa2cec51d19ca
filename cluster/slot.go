// Package cluster is rlserver's Redis Cluster support. This file: the
// key → slot mapping every cluster-aware client computes itself.
package cluster

// Slots is the number of hash slots, as in Redis Cluster.
const Slots = 16384

// crcTable is CRC-16/XMODEM's (polynomial 0x1021), a byte at a time.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc16 is CRC-16/XMODEM of b: Redis Cluster's key hash.
func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// Slot returns key's hash slot: CRC16 of the key modulo 16384, or of its
// hash tag, the part between the first '{' and the first '}' after it,
// when that part is not empty (so "{user1}.a" and "{user1}.b" share a
// slot, and "{}x" hashes whole), as Redis's keyHashSlot.
func Slot(key []byte) int {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(crc16(key) & (Slots - 1))
			}
		}
		break
	}
	return int(crc16(key) & (Slots - 1))
}
