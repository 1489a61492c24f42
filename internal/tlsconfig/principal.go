package tlsconfig

// Kafka's ssl.principal.mapping.rules: how the subject of a client's
// certificate becomes the principal's name. A rule list is read left to
// right and the first rule that applies names the principal:
//
//	RULE:pattern/replacement/[L|U]   applies when pattern matches the whole
//	                                 subject; the name is the subject with
//	                                 pattern replaced ($1 is a group), then
//	                                 lower- (L) or upper-cased (U)
//	DEFAULT                          the subject as it is
//
// Rules are separated by commas; a comma or slash inside a pattern or a
// replacement is written \, or \/. Patterns are Go regular expressions
// (RE2), which lack the back-references and lookarounds of Java's; a rule
// list that uses them is refused at start rather than misread.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper turns a certificate subject into a principal name.
type PrincipalMapper struct {
	rules []principalRule
}

type principalRule struct {
	def         bool
	pattern     *regexp.Regexp
	replacement string // in Go's ${n} form
	lower       bool
	upper       bool
}

// ErrNoRule is returned by Name when no rule applies to a subject; Kafka
// refuses such a client's connection.
var ErrNoRule = errors.New("no ssl.principal.mapping.rules rule applies")

// ParsePrincipalRules reads a rule list; an empty one is "DEFAULT".
func ParsePrincipalRules(s string) (*PrincipalMapper, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		s = "DEFAULT"
	}
	m := &PrincipalMapper{}
	for rest := s; rest != ""; {
		rest = strings.TrimSpace(rest)
		var r principalRule
		var err error
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.def, rest = true, rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			r, rest, err = parseRule(rest[len("RULE:"):])
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("rule %q: want RULE:pattern/replacement/[LU] or DEFAULT", cut(rest))
		}
		rest = strings.TrimSpace(rest)
		if rest != "" {
			if rest[0] != ',' {
				return nil, fmt.Errorf("unexpected %q after a rule; rules are separated by commas", cut(rest))
			}
			rest = rest[1:]
			if strings.TrimSpace(rest) == "" {
				return nil, errors.New("a comma ends the rules; remove it")
			}
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// parseRule reads pattern/replacement/[LU] from s and returns the rest.
func parseRule(s string) (principalRule, string, error) {
	pattern, s, ok := untilSlash(s)
	if !ok {
		return principalRule{}, "", fmt.Errorf("RULE:%s: want RULE:pattern/replacement/[LU]", cut(pattern))
	}
	replacement, s, ok := untilSlash(s)
	if !ok {
		return principalRule{}, "", fmt.Errorf("RULE:%s/%s: the replacement must end with /", cut(pattern), cut(replacement))
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return principalRule{}, "", fmt.Errorf("RULE:%s: %v (patterns are Go regular expressions)", cut(pattern), err)
	}
	r := principalRule{pattern: re, replacement: goReplacement(replacement, re.NumSubexp())}
	if len(s) > 0 && (s[0] == 'L' || s[0] == 'U') {
		r.lower, r.upper = s[0] == 'L', s[0] == 'U'
		s = s[1:]
	}
	return r, s, nil
}

// untilSlash returns s up to its first unescaped slash, with \/ and \,
// unescaped, and what follows that slash.
func untilSlash(s string) (string, string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && (s[i+1] == '/' || s[i+1] == ','):
			b.WriteByte(s[i+1])
			i++
		case s[i] == '/':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), "", false
}

// goReplacement turns Java's $1 into Go's ${1}, and a $n past the
// pattern's groups into a literal, as Kafka does.
func goReplacement(java string, groups int) string {
	var b strings.Builder
	for i := 0; i < len(java); i++ {
		if java[i] != '$' {
			b.WriteByte(java[i])
			continue
		}
		j := i + 1
		for j < len(java) && java[j] >= '0' && java[j] <= '9' {
			j++
		}
		digits := java[i+1 : j]
		// Kafka reads $123 as the longest prefix naming a group.
		for len(digits) > 1 && atoi(digits) > groups {
			digits = digits[:len(digits)-1]
		}
		if digits == "" || atoi(digits) > groups {
			b.WriteString("$$")
			continue
		}
		b.WriteString("${" + digits + "}")
		i += len(digits)
	}
	return b.String()
}

func atoi(digits string) int {
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
		if n > 1<<20 {
			return n
		}
	}
	return n
}

// Name maps subject (RFC 2253, most specific first: "CN=app,OU=eng,O=Acme")
// to a principal name.
func (m *PrincipalMapper) Name(subject string) (string, error) {
	for _, r := range m.rules {
		if r.def {
			return subject, nil
		}
		if !r.pattern.MatchString(subject) {
			continue
		}
		name := r.pattern.ReplaceAllString(subject, r.replacement)
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("%w to %q", ErrNoRule, subject)
}

// cut shortens s for an error message.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
