// Package cluster is rlserver's Redis Cluster support. This file: the
// key → slot mapping every cluster-aware client computes itself.
package cluster

import "bytes"

// Slots is the number of hash slots, as in Redis Cluster.
const Slots = 16384

// crcTables[k][i] is the CRC-16/XMODEM (polynomial 0x1021) register
// after byte i followed by k zero bytes, from a zero register: eight
// bytes then take eight independent lookups (slicing-by-8) instead of a
// chain of eight dependent ones. Every command of a cluster node hashes
// its keys, so this is on the hot path.
var crcTables = func() (t [8][256]uint16) {
	for i := range t[0] {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[0][i] = c
	}
	for k := 1; k < 8; k++ {
		for i := range t[k] {
			p := t[k-1][i]
			t[k][i] = p<<8 ^ t[0][p>>8]
		}
	}
	return t
}()

// crc16 is CRC-16/XMODEM of b: Redis Cluster's key hash.
func crc16(b []byte) uint16 {
	t := &crcTables
	var c uint16
	for len(b) >= 8 {
		c = t[7][byte(c>>8)^b[0]] ^ t[6][byte(c)^b[1]] ^ t[5][b[2]] ^ t[4][b[3]] ^
			t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, x := range b {
		c = c<<8 ^ t[0][byte(c>>8)^x]
	}
	return c
}

// Slot returns key's hash slot: CRC16 of the key modulo 16384, or of its
// hash tag, the part between the first '{' and the first '}' after it,
// when that part is not empty (so "{user1}.a" and "{user1}.b" share a
// slot, and "{}x" hashes whole), as Redis's keyHashSlot.
func Slot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) & (Slots - 1))
}
