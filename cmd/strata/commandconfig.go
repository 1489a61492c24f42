package main

// --command-config FILE: the client settings of Kafka's tools
// (kafka-topics.sh --command-config) and librdkafka, as a properties file,
// so one file serves strata, kcat (-F) and the Kafka tools alike:
//
//	security.protocol=SASL_SSL
//	sasl.mechanism=SCRAM-SHA-512
//	sasl.username=alice
//	sasl.password=alice-secret
//	ssl.ca.location=ca.pem
//
// A flag given on the command line wins over the file. Keys the client
// has no use for are refused by name, rather than silently ignored, so
// that a misspelled key does not leave a connection in clear text.

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// commandConfigKeys maps each key taken to the flag it sets; "" is a key
// that only checks (security.protocol).
var commandConfigKeys = map[string]string{
	"bootstrap.servers":        "bootstrap",
	"metadata.broker.list":     "bootstrap",
	"security.protocol":        "",
	"sasl.mechanism":           "sasl-mechanism",
	"sasl.mechanisms":          "sasl-mechanism",
	"sasl.username":            "sasl-user",
	"sasl.password":            "sasl-password",
	"ssl.ca.location":          "tls-ca-file",
	"ssl.certificate.location": "tls-cert-file",
	"ssl.key.location":         "tls-key-file",
}

// applyCommandConfig reads f.commandConfig into the flags of fs that the
// command line left unset.
func (f *clientFlags) applyCommandConfig(fs *pflag.FlagSet) error {
	if f.commandConfig == "" {
		return nil
	}
	file, err := os.Open(f.commandConfig)
	if err != nil {
		return fmt.Errorf("client: --command-config: %w", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("client: --command-config %s line %d: want key=value", f.commandConfig, n)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		flag, known := commandConfigKeys[key]
		if !known {
			return fmt.Errorf("client: --command-config %s line %d: %q is not a setting strata takes (it takes %s)", f.commandConfig, n, key, knownCommandConfigKeys())
		}
		if key == "security.protocol" {
			switch strings.ToUpper(value) {
			case "PLAINTEXT", "SASL_PLAINTEXT":
			case "SSL", "SASL_SSL":
				f.tls = true
			default:
				return fmt.Errorf("client: --command-config %s line %d: security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", f.commandConfig, n, value)
			}
			continue
		}
		if fs.Changed(flag) {
			continue
		}
		if err := fs.Set(flag, value); err != nil {
			return fmt.Errorf("client: --command-config %s line %d: %s: %w", f.commandConfig, n, key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("client: --command-config: %w", err)
	}
	return nil
}

func knownCommandConfigKeys() string {
	keys := make([]string, 0, len(commandConfigKeys))
	for k := range commandConfigKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
