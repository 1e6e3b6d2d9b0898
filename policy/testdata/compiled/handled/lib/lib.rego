package cmo.lib

shares_group if {
	some g in input.item.metadata.restrictedToGroups
	g in input.specialist.authorizedGroups
}

tags := {lower(t) | some t in input.item.metadata.tags}
