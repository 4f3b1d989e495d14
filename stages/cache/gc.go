package cache

import "os"

// Verified is a stage that Verify reports: damaged (Damage, never
// served: the next run recomputes it) or written before checksums
// existed (Unchecked: its record.json has no "files").
type Verified struct {
	Entry
	Damage    *Damage
	Unchecked bool
}

// Verify checks every stage of the cache (Entries, Check) against the
// checksums its record.json holds and passes each damaged or unchecked
// stage to found, in Entries' order, as it goes. It returns how many
// stages there are, how many are damaged and how many unchecked.
func (c *Cache) Verify(found func(Verified)) (stages, damaged, unchecked int, err error) {
	entries, err := c.Entries()
	if err != nil {
		return 0, 0, 0, err
	}
	for _, e := range entries {
		ok, d, err := c.Check(e.Kind, e.Key)
		switch {
		case err != nil:
			return 0, 0, 0, err
		case d != nil:
			damaged++
			found(Verified{Entry: e, Damage: d})
		case ok && c.Unverifiable(e.Kind, e.Key):
			unchecked++
			found(Verified{Entry: e, Unchecked: true})
		}
	}
	return len(entries), damaged, unchecked, nil
}

// Collected is what GC removed (or would remove): Removed of the cache's
// Stages stages, Bytes in all.
type Collected struct {
	Stages, Removed int
	Bytes           int64
}

// GC removes every stage of the cache that keep does not hold (by
// "KIND/KEY", as retain.Keys returns them), then every stray entry
// (Strays); with dry it removes nothing and reports what it would. Each
// stage goes to removed and each stray to strayed as it goes. Unless
// dry, call it holding the exclusive lock.
func (c *Cache) GC(keep map[string]bool, dry bool, removed func(Entry), strayed func(Stray)) (Collected, error) {
	entries, err := c.Entries()
	if err != nil {
		return Collected{}, err
	}
	res := Collected{Stages: len(entries)}
	for _, e := range entries {
		if keep[e.Kind+"/"+e.Key] {
			continue
		}
		if !dry {
			if err := c.Remove(e.Kind, e.Key); err != nil {
				return res, err
			}
		}
		res.Removed++
		res.Bytes += e.Bytes
		removed(e)
	}
	strays, err := c.Strays()
	if err != nil {
		return res, err
	}
	for _, s := range strays {
		if !dry {
			if err := os.RemoveAll(s.Path); err != nil {
				return res, err
			}
		}
		strayed(s)
	}
	return res, nil
}
