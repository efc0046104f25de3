// Command argocd-lua runs an Argo CD resource health script the way Argo CD does: gopher-lua
// (Lua 5.1), the object decoded into the global `obj` by gopher-json, the returned table read as
// {status, message} and the status checked against Argo CD's health codes.
//
// Usage: argocd-lua <health.lua> < objects.json   (a JSON array of objects)
// Prints a JSON array of {"status": ..., "message": ...}, one per object, or exits 1 with the
// Lua error (as Argo CD would show it).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	lua "github.com/yuin/gopher-lua"
	luajson "layeh.com/gopher-json"
)

type health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// Argo CD's health codes (gitops-engine pkg/health).
var validStatus = map[string]bool{
	"Healthy": true, "Progressing": true, "Degraded": true, "Suspended": true, "Missing": true, "Unknown": true,
}

func evaluate(script string, object interface{}) (health, error) {
	// Argo CD opens only the safe libraries, without os and io.
	state := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer state.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		state.Push(state.NewFunction(lib.open))
		state.Push(lua.LString(lib.name))
		state.Call(1, 0)
	}
	state.SetGlobal("obj", luajson.DecodeValue(state, object))
	if err := state.DoString(script); err != nil {
		return health{}, err
	}
	returned := state.Get(-1)
	table, ok := returned.(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("expect table output from Lua script, not %s", returned.Type())
	}
	result := health{
		Status:  lua.LVAsString(table.RawGetString("status")),
		Message: lua.LVAsString(table.RawGetString("message")),
	}
	if !validStatus[result.Status] {
		return health{}, fmt.Errorf("Lua returned an invalid health status: %q", result.Status)
	}
	return result, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: argocd-lua <health.lua> < objects.json")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var objects []interface{}
	if err := json.NewDecoder(os.Stdin).Decode(&objects); err != nil {
		fmt.Fprintln(os.Stderr, "reading the objects:", err)
		os.Exit(2)
	}
	results := make([]health, 0, len(objects))
	for i, object := range objects {
		result, err := evaluate(string(script), object)
		if err != nil {
			fmt.Fprintf(os.Stderr, "object %d: %v\n", i, err)
			os.Exit(1)
		}
		results = append(results, result)
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
