package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/strata-streaming/strata/agent"
)

// envPrefix starts the environment variable of every agent flag:
// --log-flush is STRATA_LOG_FLUSH.
const envPrefix = "STRATA_"

func newAgentCmd() *cobra.Command {
	cfg := agent.DefaultConfig()
	var configFile, logLevel, logFormat string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a Strata agent (with no flags: a single-agent cluster in ./data on :9092)",
		Long: `Run a Strata agent. Every setting is a flag; each flag can also come from the
environment variable STRATA_<FLAG> (--log-flush is STRATA_LOG_FLUSH) or from a
YAML file given with --config whose keys are the flag names. A flag on the
command line wins over the environment, which wins over the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := cmd.Flags()
			if err := layerSettings(fs, configFile); err != nil {
				return err
			}
			cfg.ApplyFlags(fs)
			logger, err := newLogger(logLevel, logFormat)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			a, err := agent.New(ctx, cfg, agent.Options{Logger: logger})
			if err != nil {
				return err
			}
			return a.Run(ctx)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&configFile, "config", "", "YAML file of settings, keyed by flag name (STRATA_CONFIG).")
	fs.StringVar(&logLevel, "log-level", "info", "Log level: debug, info, warn or error.")
	fs.StringVar(&logFormat, "log-format", "text", "Log format: text or json.")
	cfg.RegisterFlags(fs)
	cmd.AddCommand(newAgentDrainCmd())
	return cmd
}

// layerSettings fills every flag not given on the command line from its
// STRATA_* variable, or else from the YAML file. A value that does not parse
// is an error naming the flag and where the value came from.
func layerSettings(fs *pflag.FlagSet, configFile string) error {
	if configFile == "" {
		configFile = os.Getenv(envPrefix + "CONFIG")
	}
	file := map[string]string{}
	if configFile != "" {
		var err error
		if file, err = readConfigFile(configFile, fs); err != nil {
			return err
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" {
			return
		}
		env := envPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		source, value, ok := env, "", false
		if v, set := os.LookupEnv(env); set {
			value, ok = v, true
		} else if v, set := file[f.Name]; set {
			source, value, ok = configFile, v, true
		}
		if !ok {
			return
		}
		if err := fs.Set(f.Name, value); err != nil {
			errs = append(errs, fmt.Errorf("--%s from %s: %q: %v", f.Name, source, value, err))
		}
	})
	return errors.Join(errs...)
}

// readConfigFile reads a flat YAML mapping of flag names to scalar values.
func readConfigFile(path string, fs *pflag.FlagSet) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	out := map[string]string{}
	for key, node := range raw {
		if fs.Lookup(key) == nil || key == "config" {
			return nil, fmt.Errorf("--config %s: unknown setting %q (keys are flag names, such as data-dir)", path, key)
		}
		if node.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("--config %s: %s: want a single value", path, key)
		}
		out[key] = node.Value
	}
	return out, nil
}

func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
