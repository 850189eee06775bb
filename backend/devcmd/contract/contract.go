// Package contract writes the frontend's wire contract
// (frontend/src/lib/backend/contract.gen.ts) from the Go types: the
// records as encoding/json writes them (reflection sees the same tags and
// shapes the encoder does), the typed string constants (statuses, kinds,
// modes, event names, error codes) with their doc comments read from the
// source, and the window's bindings from service.API. A test fails when the
// file in the tree is not what Generate writes; `go generate ./...`
// rewrites it. A slice field the Go side never leaves nil says so with the
// tag ts:"notnull", so the client need not check for null.
package contract

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"time"

	"conch/backend/activity"
	"conch/backend/ask"
	"conch/backend/chat"
	"conch/backend/conversation"
	"conch/backend/doctor"
	"conch/backend/errcode"
	"conch/backend/event"
	"conch/backend/host"
	"conch/backend/pref"
	"conch/backend/provider"
	"conch/backend/provider/registry"
	"conch/backend/push"
	"conch/backend/routine"
	"conch/backend/search"
	"conch/backend/service"
	"conch/backend/store"
	"conch/backend/task"
	"conch/backend/taskrun"
	"conch/backend/tool"
)

// Path is the generated file, relative to the module root.
const Path = "frontend/src/lib/backend/contract.gen.ts"

// enums are the typed string constants the frontend shares, under their
// TypeScript names.
var enums = []struct {
	pkg, goType, ts string
}{
	{"backend/task", "Status", "Status"},
	{"backend/task", "Kind", "Kind"},
	{"backend/task", "Mode", "Mode"},
	{"backend/task", "Wake", "Wake"},
	{"backend/task", "ResultSource", "ResultSource"},
	{"backend/ask", "Answer", "AskAnswer"},
	{"backend/conversation", "Kind", "MessageKind"},
	{"backend/conversation", "OriginKind", "OriginKind"},
	{"backend/event", "Type", "EventType"},
	{"backend/event", "NoticeKind", "NoticeKind"},
	{"backend/errcode", "Code", "ServerErrorCode"},
	{"backend/doctor", "Level", "Level"},
	{"backend/tool", "Effect", "Effect"},
	{"backend/provider", "Category", "Category"},
	{"backend/service", "ApprovalKind", "ApprovalKind"},
	{"backend/store", "RoutineKind", "RoutineKind"},
	{"backend/store", "HostStatus", "HostStatus"},
}

// records are the JSON records, under their TypeScript names; a record a
// listed one refers to must be listed too.
var records = []struct {
	v  any
	ts string
}{
	{task.Task{}, "Task"},
	{task.Result{}, "Result"},
	{task.Worktree{}, "Worktree"},
	{task.WorktreeWork{}, "WorktreeWork"},
	{task.Salvage{}, "Salvage"},
	{task.Overlap{}, "Overlap"},
	{task.Paused{}, "Paused"},
	{task.Resume{}, "Resume"},
	{ask.Question{}, "Question"},
	{ask.Change{}, "AskChange"},
	{taskrun.Slots{}, "Slots"},
	{taskrun.Concurrent{}, "Concurrent"},
	{taskrun.CreateRequest{}, "CreateTaskRequest"},
	{taskrun.Options{}, "TaskOptions"},
	{taskrun.Lent{}, "LentProvider"},
	{store.ProviderConfig{}, "StoredProvider"},
	{service.Approval{}, "Approval"},
	{service.TaskList{}, "TaskList"},
	{service.TaskQuery{}, "TaskQuery"},
	{service.OutputChunk{}, "OutputChunk"},
	{service.Fetched{}, "Fetched"},
	{service.ConversationList{}, "ConversationList"},
	{service.ConversationQuery{}, "ConversationQuery"},
	{service.ProviderList{}, "ProviderList"},
	{service.BackupSaved{}, "BackupSaved"},
	{service.About{}, "About"},
	{service.SearchQuery{}, "SearchQuery"},
	{search.Results{}, "SearchResults"},
	{search.Hit{}, "SearchHit"},
	{search.Piece{}, "SnippetPiece"},
	{search.Progress{}, "IndexProgress"},
	{service.ActivityQuery{}, "ActivityQuery"},
	{activity.Page{}, "ActivityPage"},
	{activity.Day{}, "ActivityDay"},
	{activity.Row{}, "ActivityRow"},
	{doctor.Report{}, "DoctorReport"},
	{doctor.Check{}, "DoctorCheck"},
	{pref.Preferences{}, "Preferences"},
	{pref.Limits{}, "Limits"},
	{pref.Topics{}, "Topics"},
	{pref.Budget{}, "Budget"},
	{pref.Price{}, "Price"},
	{conversation.Conversation{}, "Conversation"},
	{conversation.Origin{}, "Origin"},
	{conversation.Message{}, "Message"},
	{conversation.ToolCall{}, "ToolCall"},
	{conversation.ToolResult{}, "ToolResult"},
	{conversation.TaskUpdate{}, "TaskSnapshot"},
	{conversation.LimitNotice{}, "LimitNotice"},
	{chat.Page{}, "ConversationPage"},
	{chat.CreateRequest{}, "CreateConversationRequest"},
	{chat.PatchRequest{}, "PatchConversationRequest"},
	{registry.Listing{}, "Provider"},
	{registry.PutRequest{}, "ProviderConfig"},
	{registry.Found{}, "Found"},
	{registry.FoundServer{}, "FoundServer"},
	{registry.FoundCLI{}, "FoundCLI"},
	{registry.FoundKey{}, "FoundKey"},
	{provider.Models{}, "Models"},
	{event.Delta{}, "MessageDelta"},
	{event.Notice{}, "TaskNotice"},
	{service.PushKey{}, "PushKey"},
	{service.PushSubscribed{}, "PushSubscribed"},
	{push.Subscription{}, "PushSubscriptionRecord"},
	{push.SubscriptionKeys{}, "PushSubscriptionKeys"},
	{store.Routine{}, "Routine"},
	{routine.Card{}, "RoutineCard"},
	{routine.LastRun{}, "RoutineRun"},
	{routine.List{}, "RoutineList"},
	{routine.CreateRequest{}, "CreateRoutineRequest"},
	{routine.PatchRequest{}, "PatchRoutineRequest"},
	{store.Host{}, "Host"},
	{store.HostProvider{}, "HostProvider"},
	{host.List{}, "HostList"},
	{host.PutRequest{}, "PutHostRequest"},
	{host.TestResult{}, "HostTestResult"},
	{host.Runner{}, "HostRunner"},
	{host.AcceptRequest{}, "AcceptHostKeyRequest"},
	{errcode.Body{}, "ErrorBody"},
	{errcode.Detail{}, "ErrorDetail"},
}

// Generate writes the contract.
func Generate() ([]byte, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	g := &gen{root: root, names: map[reflect.Type]string{}, enumOf: map[reflect.Type]string{}, docs: map[string][]*ast.File{}}
	for _, r := range records {
		g.names[reflect.TypeOf(r.v)] = r.ts
	}
	g.w("// Code generated by backend/devcmd/contract; DO NOT EDIT.\n")
	g.w("// The wire contract with the Go side, written from its types: change the Go\n")
	g.w("// side and run `go generate ./...`. contract.ts adds the client's own helpers.\n\n")
	enumTypes := map[string]reflect.Type{
		"backend/task.Status": reflect.TypeOf(task.Status("")), "backend/task.Kind": reflect.TypeOf(task.Kind("")),
		"backend/task.Mode": reflect.TypeOf(task.Mode("")), "backend/task.Wake": reflect.TypeOf(task.Wake("")),
		"backend/task.ResultSource": reflect.TypeOf(task.ResultSource("")), "backend/ask.Answer": reflect.TypeOf(ask.Answer("")),
		"backend/conversation.Kind": reflect.TypeOf(conversation.Kind("")), "backend/conversation.OriginKind": reflect.TypeOf(conversation.OriginKind("")),
		"backend/event.Type": reflect.TypeOf(event.Type("")), "backend/event.NoticeKind": reflect.TypeOf(event.NoticeKind("")), "backend/errcode.Code": reflect.TypeOf(errcode.Code("")),
		"backend/doctor.Level": reflect.TypeOf(doctor.Level("")), "backend/tool.Effect": reflect.TypeOf(tool.Effect("")),
		"backend/provider.Category":    reflect.TypeOf(provider.Category("")),
		"backend/service.ApprovalKind": reflect.TypeOf(service.ApprovalKind("")),
		"backend/store.RoutineKind":    reflect.TypeOf(store.RoutineKind("")),
		"backend/store.HostStatus":     reflect.TypeOf(store.HostStatus("")),
	}
	for _, e := range enums {
		rt, ok := enumTypes[e.pkg+"."+e.goType]
		if !ok {
			return nil, fmt.Errorf("contract: no type for enum %s.%s", e.pkg, e.goType)
		}
		g.enumOf[rt] = e.ts
		if err := g.enum(e.pkg, e.goType, e.ts); err != nil {
			return nil, err
		}
	}
	for _, r := range records {
		if err := g.record(reflect.TypeOf(r.v), r.ts); err != nil {
			return nil, err
		}
	}
	if err := g.bindings(); err != nil {
		return nil, err
	}
	if g.err != nil {
		return nil, g.err
	}
	return g.buf.Bytes(), nil
}

// Write writes the contract into the tree at root (the module root).
func Write() error {
	b, err := Generate()
	if err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(root, Path), b, 0o644)
}

func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("contract: cannot find its own source")
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("contract: the module root is not at %s: %w", root, err)
	}
	return root, nil
}

type gen struct {
	root   string
	buf    bytes.Buffer
	names  map[reflect.Type]string
	enumOf map[reflect.Type]string
	docs   map[string][]*ast.File
	err    error
}

func (g *gen) w(format string, args ...any) { fmt.Fprintf(&g.buf, format, args...) }

// pkg parses a package's source files (not its tests), in name order,
// for doc comments and constants.
func (g *gen) pkg(dir string) ([]*ast.File, error) {
	if files, ok := g.docs[dir]; ok {
		return files, nil
	}
	ents, err := os.ReadDir(filepath.Join(g.root, dir))
	if err != nil {
		return nil, fmt.Errorf("contract: parse %s: %w", dir, err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range ents { // ReadDir sorts by name
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(g.root, dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("contract: parse %s: %w", dir, err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("contract: no package in %s", dir)
	}
	g.docs[dir] = files
	return files, nil
}

// enum writes a typed string type's constants as a const object and a
// union type, in source order, with their comments.
func (g *gen) enum(dir, goType, ts string) error {
	p, err := g.pkg(dir)
	if err != nil {
		return err
	}
	typeDoc := ""
	type member struct{ key, value, doc string }
	var members []member
	for _, f := range p {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == goType {
						typeDoc = docText(gd.Doc, s.Doc)
					}
				case *ast.ValueSpec:
					if gd.Tok != token.CONST || !isIdent(s.Type, goType) || len(s.Values) != len(s.Names) {
						continue
					}
					for i, n := range s.Names {
						lit, ok := s.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING || !n.IsExported() {
							continue
						}
						key := trimType(n.Name, goType)
						members = append(members, member{key: key, value: lit.Value[1 : len(lit.Value)-1], doc: docText(s.Doc, nil)})
					}
				}
			}
		}
	}
	if len(members) == 0 {
		return fmt.Errorf("contract: no constants of %s.%s", dir, goType)
	}
	g.comment("", typeDoc)
	g.w("export const %s = {\n", ts)
	for _, m := range members {
		g.comment("  ", m.doc)
		g.w("  %s: '%s',\n", m.key, m.value)
	}
	g.w("} as const;\nexport type %s = (typeof %s)[keyof typeof %s];\n\n", ts, ts, ts)
	return nil
}

// trimType drops the type's name, or its last word, from a constant's name
// where Go needed it to keep names apart: conversation.ToolCallKind is
// MessageKind.ToolCall, task.WakeNone is Wake.None, task.SourceExit is
// ResultSource.Exit.
func trimType(name, goType string) string {
	words := []string{goType}
	for i := len(goType) - 1; i > 0; i-- {
		if goType[i] >= 'A' && goType[i] <= 'Z' {
			words = append(words, goType[i:])
			break
		}
	}
	for _, w := range words {
		for _, k := range []string{strings.TrimSuffix(name, w), strings.TrimPrefix(name, w)} {
			if k != name && k != "" && k[0] >= 'A' && k[0] <= 'Z' {
				return k
			}
		}
	}
	return name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// docText is a comment group's text on one line per paragraph.
func docText(groups ...*ast.CommentGroup) string {
	for _, cg := range groups {
		if cg != nil {
			return strings.TrimSpace(cg.Text())
		}
	}
	return ""
}

func (g *gen) comment(indent, doc string) {
	if doc == "" {
		return
	}
	doc = strings.ReplaceAll(doc, "*/", "* /")
	lines := strings.Split(doc, "\n")
	if len(lines) == 1 {
		g.w("%s/** %s */\n", indent, lines[0])
		return
	}
	g.w("%s/**\n", indent)
	for _, l := range lines {
		g.w("%s * %s\n", indent, strings.TrimRight(l, " "))
	}
	g.w("%s */\n", indent)
}

// fieldDocs reads the doc comments of a struct's fields from its source.
func (g *gen) fieldDocs(t reflect.Type) (string, map[string]string) {
	dir := strings.TrimPrefix(t.PkgPath(), "conch/")
	p, err := g.pkg(dir)
	if err != nil {
		g.err = err
		return "", nil
	}
	out := map[string]string{}
	typeDoc := ""
	for _, f := range p {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if ts.Name.Name != t.Name() {
					continue
				}
				typeDoc = docText(gd.Doc, ts.Doc)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, f := range st.Fields.List {
					for _, n := range f.Names {
						out[n.Name] = docText(f.Doc, f.Comment)
					}
				}
			}
		}
	}
	return typeDoc, out
}

// record writes a struct as a TypeScript interface of its JSON shape.
func (g *gen) record(t reflect.Type, ts string) error {
	if t.Kind() != reflect.Struct {
		return fmt.Errorf("contract: %s is not a struct", t)
	}
	doc, fields := g.fieldDocs(t)
	g.comment("", doc)
	g.w("export interface %s {\n", ts)
	g.fields(t, fields, "  ")
	g.w("}\n\n")
	return g.err
}

func (g *gen) fields(t reflect.Type, docs map[string]string, indent string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			g.fields(f.Type, docs, indent)
			continue
		}
		if name == "" {
			name = f.Name
		}
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		g.comment(indent, docs[f.Name])
		mark := ""
		if optional {
			mark = "?"
		}
		// ts:"notnull" marks a slice the Go side never leaves nil.
		nullable := !optional && f.Tag.Get("ts") != "notnull"
		g.w("%s%s%s: %s;\n", indent, name, mark, g.tsType(f.Type, nullable))
	}
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf([]byte(nil))
)

// tsType is t as TypeScript. nullable says a nil value is sent as null
// (a pointer, slice or map without omitempty).
func (g *gen) tsType(t reflect.Type, nullable bool) string {
	orNull := func(s string) string {
		if nullable {
			return s + " | null"
		}
		return s
	}
	if t == timeType {
		return "string"
	}
	if t.PkgPath() == "encoding/json" && t.Name() == "RawMessage" {
		return "unknown"
	}
	if name, ok := g.enumOf[t]; ok {
		return name
	}
	switch t.Kind() {
	case reflect.Pointer:
		return orNull(g.tsType(t.Elem(), false))
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		if t == rawType {
			return "string"
		}
		return orNull(g.tsType(t.Elem(), false) + "[]")
	case reflect.Map:
		return orNull("Record<string, " + g.tsType(t.Elem(), false) + ">")
	case reflect.Interface:
		return "unknown"
	case reflect.Struct:
		if name, ok := g.names[t]; ok {
			return name
		}
		if t.Name() == "" { // an anonymous struct, written in place
			var b strings.Builder
			b.WriteString("{ ")
			for i := range t.NumField() {
				f := t.Field(i)
				name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" || !f.IsExported() {
					continue
				}
				if name == "" {
					name = f.Name
				}
				optional := strings.Contains(opts, "omitempty")
				mark := ""
				if optional {
					mark = "?"
				}
				fmt.Fprintf(&b, "%s%s: %s; ", name, mark, g.tsType(f.Type, !optional))
			}
			b.WriteString("}")
			return b.String()
		}
		g.err = fmt.Errorf("contract: %s is used but not listed in records", t)
		return "unknown"
	}
	g.err = fmt.Errorf("contract: no TypeScript for %s", t)
	return "unknown"
}

// bindings writes the window's bindings: service.API's methods, which
// Wails binds on window.go.service.Service, with their parameter names
// from the source.
func (g *gen) bindings() error {
	p, err := g.pkg("backend/service")
	if err != nil {
		return err
	}
	params := map[string][]string{}
	docs := ""
	for _, f := range p {
		ast.Inspect(f, func(n ast.Node) bool {
			gd, ok := n.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				return true
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok || ts.Name.Name != "API" {
					continue
				}
				docs = docText(gd.Doc, ts.Doc)
				for _, m := range it.Methods.List {
					ft := m.Type.(*ast.FuncType)
					var names []string
					for _, f := range ft.Params.List {
						for _, n := range f.Names {
							names = append(names, n.Name)
						}
					}
					params[m.Names[0].Name] = names
				}
			}
			return false
		})
	}
	api := reflect.TypeOf((*service.API)(nil)).Elem()
	g.comment("", "The window's bindings, window.go.service.Service: "+strings.ReplaceAll(docs, "\n", " "))
	g.w("export interface Bindings {\n")
	for i := range api.NumMethod() {
		m := api.Method(i)
		names := params[m.Name]
		if len(names) != m.Type.NumIn() {
			return fmt.Errorf("contract: service.API.%s: %d parameter names for %d parameters", m.Name, len(names), m.Type.NumIn())
		}
		var args []string
		for j := range m.Type.NumIn() {
			args = append(args, fmt.Sprintf("%s: %s", names[j], g.tsType(m.Type.In(j), false)))
		}
		ret := "void"
		if m.Type.NumOut() == 2 {
			ret = g.tsType(m.Type.Out(0), false)
		}
		g.w("  %s(%s): Promise<%s>;\n", m.Name, strings.Join(args, ", "), ret)
	}
	g.w("}\n")
	return g.err
}
