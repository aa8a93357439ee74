module wink.dev/wink

go 1.24
