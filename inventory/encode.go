package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/reports"
)

// ErrRefused is wrapped by the error of a map that is not written: the
// inventory holds an identifier the map cannot carry, named by the error.
var ErrRefused = errors.New("the map is not written")

// WriteJSON writes the inventory as indented JSON, as --expect reads it.
func WriteJSON(w io.Writer, inv node.Inventory) error {
	b, err := json.MarshalIndent(inv, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteYAML writes the inventory as YAML, the form to store and compare
// later (node.ParseInventory reads it back).
func WriteYAML(w io.Writer, inv node.Inventory) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(inv); err != nil {
		return err
	}
	return enc.Close()
}

// checkMap refuses an inventory whose identifiers a map cannot carry.
func checkMap(inv node.Inventory) error {
	if err := inv.CheckFields(); err != nil {
		return refused(err)
	}
	return nil
}

// refused is err, the reason a map is not written.
func refused(err error) error { return fmt.Errorf("%w; %w", err, ErrRefused) }

// comment is s made safe for the rest of a "#" line: the tables' rule,
// with newline and carriage return shown as \n and \r.
func comment(s string) string { return reports.Terminal(s) }
