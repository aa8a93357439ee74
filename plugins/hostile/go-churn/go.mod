module wink.dev/plugins/go-churn

go 1.24

require wink.dev/wink v0.1.0

replace wink.dev/wink => ../../../guest-sdk/go
