# A user policy: only items of kind "note" are delivered.
package cmo.context

default allow := false

allow if input.item.kind == "note"

reason := "note" if allow

reason := "not a note" if not allow
