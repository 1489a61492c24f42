//go:build !strata_unsafe_ack

package partition

// unsafeAck is false in every build but the chaos checker's broken one
// (unsafe_ack_on.go).
const unsafeAck = false
