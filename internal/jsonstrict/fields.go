package jsonstrict

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// field is one JSON member of a struct as encoding/json sees it.
type field struct {
	name   string
	typ    reflect.Type // the Go field's own type (a pointer stays a pointer)
	quoted bool         // the ",string" option: encoding/json checks it
	depth  int          // how many embedded structs deep
	tagged bool
	index  []int
}

// structInfo is the set of JSON members of a struct type.
type structInfo struct {
	byName map[string]*field
	names  []string // in declaration order, for messages
}

// structFields computes the members of t the way encoding/json's typeFields
// does: exported fields, fields of untagged embedded structs promoted, the
// shallowest field winning a name and, at equal depth, the tagged one (two
// untagged or two tagged at the same depth hide each other).
func structFields(t reflect.Type) *structInfo {
	type queued struct {
		typ   reflect.Type
		index []int
	}
	var all []field
	next := []queued{{typ: t}}
	visited := map[reflect.Type]bool{}
	nextCount := map[reflect.Type]int{t: 1}
	for len(next) > 0 {
		current := next
		next = nil
		count := nextCount
		nextCount = map[reflect.Type]int{}
		for _, q := range current {
			if visited[q.typ] {
				continue
			}
			visited[q.typ] = true
			for i := range q.typ.NumField() {
				sf := q.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clip(q.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					quoted := false
					if slices.Contains(strings.Split(opts, ","), "string") {
						switch ft.Kind() {
						case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
							reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
							reflect.Float32, reflect.Float64, reflect.String:
							quoted = true
						}
					}
					f := field{name: name, typ: sf.Type, quoted: quoted, depth: len(index), tagged: name != "", index: index}
					if f.name == "" {
						f.name = sf.Name
					}
					all = append(all, f)
					if count[q.typ] > 1 {
						// The struct is embedded twice at this depth: its
						// fields hide each other, as in encoding/json.
						all = append(all, f)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, queued{typ: ft, index: index})
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(a.depth, b.depth); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	info := &structInfo{byName: map[string]*field{}}
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].name == all[i].name {
			j++
		}
		same := all[i:j]
		if len(same) == 1 || same[0].depth != same[1].depth || same[0].tagged != same[1].tagged {
			info.byName[same[0].name] = &same[0]
		}
		i = j
	}
	declared := make([]*field, 0, len(info.byName))
	for _, f := range info.byName {
		declared = append(declared, f)
	}
	slices.SortFunc(declared, func(a, b *field) int { return slices.Compare(a.index, b.index) })
	for _, f := range declared {
		info.names = append(info.names, f.name)
	}
	return info
}

// validTag is encoding/json's rule for a usable name in a json tag.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
