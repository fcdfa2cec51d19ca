package persist

import (
	"bytes"
	"testing"
)

// FuzzLoadChunk: a log chunk of any bytes (a damaged disk) loads without
// panicking; every record handed on lies within the chunk, and each
// record read is either handed on or counted as skipped.
func FuzzLoadChunk(f *testing.F) {
	good := []byte{FormatLog}
	good = appendPut(good, &Record{Key: []byte("k1"), Version: FormatV2, Kind: 1, ExpireAt: 5e18, Payload: []byte{1, 2, 3}})
	good = appendDelete(good, []byte("k2"))
	good = appendPut(good, &Record{Key: []byte("k3"), Version: FormatV1, Kind: 2, Payload: []byte("xyz")})
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add([]byte{FormatLog, opPut, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, v []byte) {
		var st LoadStats
		handed := 0
		err := loadChunk(&st, 1e18, 7, v, func(r Record) error {
			handed++
			for _, b := range [][]byte{r.Key, r.Payload} {
				if len(b) > 0 && !bytes.Contains(v, b) {
					t.Fatalf("record %q: %q is not in the chunk", r.Key, b)
				}
			}
			if !r.Deleted && (r.Kind == 0 || (r.Version != FormatV1 && r.Version != FormatV2)) {
				t.Fatalf("record %q handed on with kind %d, version %d", r.Key, r.Kind, r.Version)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("loadChunk: %v", err)
		}
		if st.Loaded+st.Expired > handed || len(st.Errors) > st.Skipped || (st.Skipped > 0) != (len(st.Errors) > 0) {
			t.Fatalf("stats %+v, %d records handed on", st, handed)
		}
	})
}
