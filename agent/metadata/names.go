package metadata

import "fmt"

// maxTopicNameLength is Kafka's limit: 249, so that "<topic>-<partition>"
// directory names stay under common 255-byte file name limits.
const maxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules: 1 to 249 characters from
// [a-zA-Z0-9._-], and not "." or "..". Names are also store key elements,
// which these rules keep safe. The error quotes the name.
//
// Kafka's other rule, that a name may not differ from an existing topic's
// only by '.' versus '_', needs the list of topics; the agent applies it.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: the empty string is not a valid topic name", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: topic name %q is not allowed", ErrInvalidTopic, name)
	case len(name) > maxTopicNameLength:
		return fmt.Errorf("%w: topic name %q is %d characters; the limit is %d",
			ErrInvalidTopic, name, len(name), maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: topic name %q contains %q; only ASCII letters, digits, '.', '_' and '-' are allowed",
				ErrInvalidTopic, name, rune(c))
		}
	}
	return nil
}
