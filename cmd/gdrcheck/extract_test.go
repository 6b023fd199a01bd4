package main

import "github.com/gdrcheck/gdrcheck/internal/ttar"

func extract(archive, dir string) error { return ttar.ExtractFile(archive, dir) }
