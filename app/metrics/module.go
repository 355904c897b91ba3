package metrics

import (
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
)

// Module is the metrics endpoint, configured by the [metrics] section.
// When metrics.enabled is true it provides the app's metric.MeterProvider
// and serves its metrics on serve at metrics.path, and on the health
// address of queue:work (--health-addr) through app.MetricsRoute; off,
// it provides no meter provider (a nil one), and the queue records
// nothing.
func Module() fx.Option { return module(config.Section("metrics", DefaultConfig())) }

// ModuleWith is [Module] configured in code instead: a zero Path takes its
// default (set Enabled to serve it).
//
//	metrics.ModuleWith(metrics.Config{Enabled: true})
func ModuleWith(cfg Config) fx.Option { return module(fx.Supply(fx.Private, cfg)) }

// Access gives the endpoint the function that decides who may read it.
// Give it once.
func Access(f AccessFunc) fx.Option {
	return fx.Provide(func() AccessFunc { return f })
}

func module(cfg fx.Option) fx.Option {
	return fx.Module("metrics",
		cfg,
		fx.Provide(fx.Private, newMetrics),
		fx.Provide(func(m *Metrics) metric.MeterProvider {
			if m == nil {
				return nil
			}
			return m.MeterProvider()
		}),
		fx.Provide(func(m *Metrics) app.MetricsRoute {
			if m == nil {
				return app.MetricsRoute{}
			}
			return app.MetricsRoute{Route: m.Route()}
		}),
		fx.Provide(fx.Annotate(func(m *Metrics) []app.Route {
			if m == nil {
				return nil
			}
			return []app.Route{m.Route()}
		}, fx.ResultTags(`group:"app.routes,flatten"`))),
	)
}

type params struct {
	fx.In
	Config     Config
	AccessFunc AccessFunc `optional:"true"`
	Lifecycle  fx.Lifecycle
}

// newMetrics is the app's Metrics when they are enabled, nil otherwise.
func newMetrics(p params) (*Metrics, error) {
	if !p.Config.Enabled {
		return nil, nil
	}
	m, err := New(Params{Config: p.Config, AccessFunc: p.AccessFunc})
	if err != nil {
		return nil, err
	}
	p.Lifecycle.Append(fx.StopHook(m.Shutdown))
	return m, nil
}
