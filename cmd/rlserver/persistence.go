package main

import (
	"github.com/rlserver/rlserver/shard"
)

// persistence is the placeholder until the persistence layer lands: the
// server runs in memory.
type persistence struct{}

func openPersistence(o *options, store *shard.Store, clock *shard.Clock) (*persistence, error) {
	return nil, nil
}

func (p *persistence) Save() error         { return nil }
func (p *persistence) BGSave() error       { return nil }
func (p *persistence) LastSave() int64     { return 0 }
func (p *persistence) Info() [][2]string   { return nil }
func (p *persistence) Restored() int       { return 0 }
func (p *persistence) Close() error        { return nil }
func (p *persistence) Shutdown(bool) error { return nil }
