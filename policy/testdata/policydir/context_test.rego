# Deliberately broken: WithPolicyDir must skip *_test.rego files.
package cmo.context_test
this is not rego
