package testagent

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// waitReady polls GET /readyz until it answers 200, the deadline passes or
// the process exits (exited is closed).
func waitReady(httpAddr string, timeout time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	url := "http://" + httpAddr + "/readyz"
	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		} else {
			last = err
		}
		select {
		case <-exited:
			return fmt.Errorf("agent exited before it was ready (last probe: %v)", last)
		case <-ctx.Done():
			return fmt.Errorf("agent not ready within %v (last probe: %v)", timeout, last)
		case <-ticker.C:
		}
	}
}

// tail returns at most logTailBytes of the end of the agent output.
func (a *Agent) tail() string {
	s := a.Logs()
	if len(s) > logTailBytes {
		s = "...\n" + s[len(s)-logTailBytes:]
	}
	return s
}
