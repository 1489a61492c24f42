package main

// The flags of commands that call an agent's HTTP port (`agent drain`,
// `tiering status`): HTTPS for agents with --http-tls, and the credentials
// the port may ask for (agent/httpapi): a token of the agents'
// --http-token-file, or a client certificate whose principal the ACLs
// allow.

import (
	"fmt"
	"net/http"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/internal/secretfile"
)

// agentHTTPFlags are --tls, --tls-ca-file, --tls-cert-file, --tls-key-file
// and --http-token-file.
type agentHTTPFlags struct {
	tls       clientFlags // only its TLS fields
	tokenFile string
}

func (f *agentHTTPFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.tokenFile, "http-token-file", "", "The agents' --http-token-file; its first token authorizes the request.")
	fs.BoolVar(&f.tls.tls, "tls", false, "Call the agent over HTTPS (its --http-tls), checking its certificate against the system's roots or --tls-ca-file.")
	fs.StringVar(&f.tls.tlsCAFile, "tls-ca-file", "", "PEM file of the CA certificates that sign the agent's certificate (implies --tls).")
	fs.StringVar(&f.tls.tlsCertFile, "tls-cert-file", "", "PEM client certificate, for an agent with --http-tls-client-auth whose ACLs allow its principal on the CLUSTER (implies --tls; with --tls-key-file).")
	fs.StringVar(&f.tls.tlsKeyFile, "tls-key-file", "", "PEM key of --tls-cert-file.")
}

// agentHTTP is how to call an agent's HTTP port.
type agentHTTP struct {
	client *http.Client
	scheme string // http or https
	token  string // "" for none
}

func (f *agentHTTPFlags) open() (agentHTTP, error) {
	h := agentHTTP{client: http.DefaultClient, scheme: "http"}
	tc, err := f.tls.tlsConfig()
	if err != nil {
		return h, err
	}
	if tc != nil {
		h.client, h.scheme = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}, "https"
	}
	if f.tokenFile != "" {
		lines, err := secretfile.Read(f.tokenFile)
		if err != nil {
			return h, fmt.Errorf("--http-token-file %s: %w", f.tokenFile, err)
		}
		h.token = lines[0].Text
	}
	return h, nil
}

// url is path on the agent at addr.
func (h agentHTTP) url(addr, path string) string { return h.scheme + "://" + addr + path }

// authorize adds the token, if any, to req.
func (h agentHTTP) authorize(req *http.Request) {
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
}
