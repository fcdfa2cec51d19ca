package persist

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged writer may still use on the
// file system holding dir.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// fileID identifies a file (a directory) on its device.
type fileID struct{ dev, ino uint64 }

// idOf returns the identity of the file at path.
func idOf(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, nil
}
