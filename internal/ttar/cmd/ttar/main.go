// Command ttar packs and unpacks fixture archives:
//
//	ttar -c -f node.ttar -C dir    archive dir
//	ttar -x -f node.ttar -C dir    extract into dir
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

func main() {
	create := flag.Bool("c", false, "create an archive of -C")
	extract := flag.Bool("x", false, "extract the archive into -C")
	file := flag.String("f", "", "archive file")
	dir := flag.String("C", ".", "directory")
	flag.Parse()
	var err error
	switch {
	case *create == *extract || *file == "":
		err = fmt.Errorf("usage: ttar -c|-x -f FILE [-C DIR]")
	case *create:
		var f *os.File
		if f, err = os.Create(*file); err == nil {
			err = ttar.Write(f, *dir)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	default:
		err = ttar.ExtractFile(*file, *dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ttar:", err)
		os.Exit(1)
	}
}
