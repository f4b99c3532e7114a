// Package topicname holds Kafka's rules for topic names
// (org.apache.kafka.common.internals.Topic), the one place they are
// written: the broker (server), the ZooKeeper cluster (cluster) and the
// console check names with it.
package topicname

import (
	"errors"
	"fmt"
)

// MaxLen is Kafka's limit on a topic name's length: 249, so that
// "<topic>-<partition>" directory names and their suffixes fit in 255
// bytes.
const MaxLen = 249

// ErrInvalid marks every error Validate returns.
var ErrInvalid = errors.New("topicname: invalid topic name")

// Validate applies Kafka's rules: 1 to MaxLen characters of ASCII
// letters, digits, '.', '_' and '-', and not "." or "..". The error wraps
// ErrInvalid and says which rule name breaks; callers wrap it in their
// own error class.
func Validate(name string) error {
	switch {
	case name == "":
		return invalid("topic name is empty")
	case name == "." || name == "..":
		return invalid(fmt.Sprintf("topic name cannot be %q", name))
	case len(name) > MaxLen:
		return invalid(fmt.Sprintf("topic name is longer than %d characters", MaxLen))
	}
	for i := 0; i < len(name); i++ {
		if !legal(name[i]) {
			return invalid(fmt.Sprintf("topic name %q contains characters other than ASCII alphanumerics, '.', '_' and '-'", name))
		}
	}
	return nil
}

func legal(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// invalidError is a broken rule; it prints as the rule alone, so that a
// caller's "%w: %v" reads "<class>: <rule>".
type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(msg string) error { return &invalidError{msg} }

// Collides reports whether a and b are equal once '.' is read as '_': two
// such topics would share metric names, so Kafka refuses the second
// (Topic.hasCollision). It does not allocate: CreateTopics compares a new
// name with every existing one.
func Collides(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == '.' {
			x = '_'
		}
		if y == '.' {
			y = '_'
		}
		if x != y {
			return false
		}
	}
	return true
}
