package cmo.helpers

kinds := {"note"}
