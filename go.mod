module github.com/rlpost/rlpost

go 1.24

require golang.org/x/sys v0.30.0
