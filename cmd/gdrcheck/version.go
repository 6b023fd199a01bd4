package main

import "runtime/debug"

// version and commit come from the module's build info, which go build
// stamps from git: the version is the tag HEAD is at (v1.2.3), else a
// pseudo-version naming the commit (v0.0.0-20260301120000-abcdef123456),
// with +dirty for a tree with changes; commit is the full revision, and
// "(modified)" after it for such a tree. A build without VCS information
// (-buildvcs=false, a tarball) is "dev", commit "unknown". The one
// version reaches --version, results.json, the textfile's
// gdrcheck_build_info, the gres.conf and launcher headers and the
// packages (tools/package).
var version, commit = buildVersion(debug.ReadBuildInfo())

func buildVersion(bi *debug.BuildInfo, ok bool) (version, commit string) {
	version, commit = "dev", "unknown"
	if !ok {
		return version, commit
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		version = v
	}
	var rev string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		commit = rev
		if modified {
			commit += " (modified)"
		}
	}
	return version, commit
}
