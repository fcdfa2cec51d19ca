package cluster

import "testing"

func TestSlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (CRC-16/XMODEM's check value)", got)
	}
	// Expected values from Redis's CLUSTER KEYSLOT.
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"foo", 12182}, {"bar", 5061}, {"somekey", 11058}, {"", 0},
		{"{user1000}.following", 3443}, {"{user1000}.followers", 3443}, {"user1000", 3443},
		{"foo{}{bar}", 8363}, {"foo{{bar}}zap", 4015}, {"foo{bar}{zap}", 5061}, {"{}x", 10595}, {"a{b", 13340},
	} {
		if got := Slot([]byte(tc.key)); got != tc.slot {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.slot)
		}
	}
}

// TestCRC16Slicing: the sliced CRC equals the byte-at-a-time one for
// every length up to 40 and random contents.
func TestCRC16Slicing(t *testing.T) {
	slow := func(b []byte) uint16 {
		var c uint16
		for _, x := range b {
			c ^= uint16(x) << 8
			for range 8 {
				if c&0x8000 != 0 {
					c = c<<1 ^ 0x1021
				} else {
					c <<= 1
				}
			}
		}
		return c
	}
	b := make([]byte, 40)
	seed := uint32(1)
	for n := 0; n <= len(b); n++ {
		for trial := 0; trial < 50; trial++ {
			for i := range b[:n] {
				seed = seed*1664525 + 1013904223
				b[i] = byte(seed >> 24)
			}
			if got, want := crc16(b[:n]), slow(b[:n]); got != want {
				t.Fatalf("crc16(%x) = %#x, want %#x", b[:n], got, want)
			}
		}
	}
}

func BenchmarkSlot(b *testing.B) {
	key := []byte("t:000000012345")
	for b.Loop() {
		Slot(key)
	}
}
