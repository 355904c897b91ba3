package metrics

import (
	"context"
	"fmt"
	"net/http"
	"path"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/navree/navree/app"
)

// Config is the [metrics] section of the configuration.
type Config struct {
	// Enabled makes the app's meter provider and serves its metrics on
	// serve; default false.
	Enabled bool `koanf:"enabled"`
	// Path is where serve answers Prometheus' scrapes; default
	// "/metrics".
	Path string `koanf:"path" validate:"required,max=200"`
}

// DefaultConfig returns the defaults of the [metrics] section.
func DefaultConfig() Config { return Config{Path: "/metrics"} }

// Validate checks the path: '/' then a clean path, not ending in '/'.
func (c Config) Validate() error {
	if len(c.Path) < 2 || c.Path[0] != '/' || c.Path[len(c.Path)-1] == '/' || path.Clean(c.Path) != c.Path {
		return fmt.Errorf("metrics: path is %q; want a path such as /metrics: '/' then a clean path, not ending in '/'", c.Path)
	}
	return nil
}

// AccessFunc says whether a request may read the metrics.
type AccessFunc func(r *http.Request) bool

// Params are what [New] builds the Metrics from.
type Params struct {
	Config Config
	// AccessFunc decides who may read the metrics; nil refuses everyone
	// (403 Forbidden).
	AccessFunc AccessFunc
}

// Metrics is the app's meter provider and its Prometheus endpoint.
type Metrics struct {
	cfg      Config
	access   AccessFunc
	provider *sdkmetric.MeterProvider
	handler  http.Handler
}

// New returns the Metrics p describes: a meter provider whose metrics its
// handler serves in the Prometheus text format, from a registry of its
// own (not Prometheus' global one).
func New(p Params) (*Metrics, error) {
	cfg := p.Config
	if cfg.Path == "" {
		cfg.Path = DefaultConfig().Path
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return &Metrics{
		cfg:      cfg,
		access:   p.AccessFunc,
		provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)),
		handler:  promhttp.HandlerFor(registry, promhttp.HandlerOpts{}),
	}, nil
}

// MeterProvider is the provider the app's modules record on.
func (m *Metrics) MeterProvider() metric.MeterProvider { return m.provider }

// Route is the endpoint, for serve.
func (m *Metrics) Route() app.Route { return app.Route{Pattern: "GET " + m.cfg.Path, Handler: m} }

// ServeHTTP serves the metrics to a request the AccessFunc lets in, and
// 403 Forbidden to any other.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.access == nil || !m.access(r) {
		http.Error(w, "Forbidden: give the app a metrics.Access rule that lets this request read the metrics", http.StatusForbidden)
		return
	}
	m.handler.ServeHTTP(w, r)
}

// Shutdown stops the meter provider.
func (m *Metrics) Shutdown(ctx context.Context) error { return m.provider.Shutdown(ctx) }
