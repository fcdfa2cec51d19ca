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
