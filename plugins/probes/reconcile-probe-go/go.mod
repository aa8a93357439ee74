module wink.dev/plugins/reconcile-probe-go

go 1.24

require wink.dev/wink v0.1.0

replace wink.dev/wink => ../../../guest-sdk/go
