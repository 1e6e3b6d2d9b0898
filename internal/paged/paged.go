package paged

import "iter"

// pageSize is how many keys one page holds.
const pageSize = 1 << 12

// Array maps uint32 keys to values of T, the zero value of T meaning that
// a key holds none: Set of the zero value is Delete. It is not safe for
// concurrent use. Its zero value is empty.
type Array[T comparable] struct {
	pages []*[pageSize]T // by key / pageSize; nil: no key set there yet
	n     int            // keys holding a value
}

// Get returns key's value, the zero value when it holds none.
func (a *Array[T]) Get(key uint32) T {
	p := int(key / pageSize)
	if p >= len(a.pages) || a.pages[p] == nil {
		var zero T
		return zero
	}
	return a.pages[p][key%pageSize]
}

// Set makes key hold v.
func (a *Array[T]) Set(key uint32, v T) {
	var zero T
	if v == zero {
		a.Delete(key)
		return
	}
	p := int(key / pageSize)
	if p >= len(a.pages) {
		a.pages = append(a.pages, make([]*[pageSize]T, p+1-len(a.pages))...)
	}
	if a.pages[p] == nil {
		a.pages[p] = new([pageSize]T)
	}
	slot := &a.pages[p][key%pageSize]
	if *slot == zero {
		a.n++
	}
	*slot = v
}

// Delete makes key hold no value.
func (a *Array[T]) Delete(key uint32) {
	p := int(key / pageSize)
	if p >= len(a.pages) || a.pages[p] == nil {
		return
	}
	var zero T
	slot := &a.pages[p][key%pageSize]
	if *slot != zero {
		a.n--
	}
	*slot = zero
}

// Len is the number of keys holding a value.
func (a *Array[T]) Len() int { return a.n }

// All yields every key holding a value, and the value, by key.
func (a *Array[T]) All() iter.Seq2[uint32, T] {
	return func(yield func(uint32, T) bool) {
		var zero T
		for p, page := range a.pages {
			if page == nil {
				continue
			}
			for i, v := range page {
				if v != zero && !yield(uint32(p*pageSize+i), v) {
					return
				}
			}
		}
	}
}
