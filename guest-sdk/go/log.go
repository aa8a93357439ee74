//go:build wasip1

package wink

import (
	"context"
	"log/slog"
	"strings"
)

// LevelTrace is wink's trace level, below slog.LevelDebug.
const LevelTrace = slog.LevelDebug - 4

// Log writes one record to the host's log, tagged with the plugin's name.
func Log(level slog.Level, message string) {
	p, n := str(message)
	importLog(witLevel(level), p, n)
}

// witLevel maps a slog level to the contract's: trace, debug, info, warn, error.
func witLevel(level slog.Level) uint32 {
	switch {
	case level < slog.LevelDebug:
		return 0
	case level < slog.LevelInfo:
		return 1
	case level < slog.LevelWarn:
		return 2
	case level < slog.LevelError:
		return 3
	default:
		return 4
	}
}

// LogHandler is a slog.Handler that writes to the host's log: the message, then the
// attributes as `key=value` (the host adds the time and the plugin's name). The host
// decides which levels it keeps, so every level is enabled.
//
// The package makes it slog's default handler, so `slog.Info` and the `log` package write to
// the host's log without setup.
type LogHandler struct {
	prefix string // attributes from WithAttrs, already formatted
	group  string // group prefix from WithGroup, with a trailing dot
}

// Enabled reports true: the host filters by level.
func (h *LogHandler) Enabled(context.Context, slog.Level) bool { return true }

// Handle writes r to the host's log.
func (h *LogHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	Log(r.Level, b.String())
	return nil
}

// WithAttrs returns a handler that writes attrs with every record.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	return &LogHandler{prefix: b.String(), group: h.group}
}

// WithGroup returns a handler that qualifies later attributes with name.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &LogHandler{prefix: h.prefix, group: h.group + name + "."}
}

func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, inner := range a.Value.Group() {
			appendAttr(b, group+a.Key+".", inner)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(group)
	b.WriteString(a.Key)
	b.WriteByte('=')
	value := a.Value.String()
	if strings.ContainsAny(value, " \"=") || value == "" {
		b.WriteString(`"` + strings.ReplaceAll(value, `"`, `\"`) + `"`)
	} else {
		b.WriteString(value)
	}
}

func init() {
	slog.SetDefault(slog.New(&LogHandler{}))
}
