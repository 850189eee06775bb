//go:build windows

package notify

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The WinRT toast API and the COM activator that receives toast clicks,
// called through their method tables. Interface ids and method places are
// those of windows.ui.notifications.idl, windows.data.xml.dom.idl and
// NotificationActivationCallback.h; every interface here extends
// IInspectable, whose six methods come first.

var (
	iidIUnknown                        = mustGUID("{00000000-0000-0000-C000-000000000046}")
	iidIClassFactory                   = mustGUID("{00000001-0000-0000-C000-000000000046}")
	iidINotificationActivationCallback = mustGUID("{53E31837-6600-4A81-9395-75CFFE746F94}")
	iidIXmlDocument                    = mustGUID("{F7F3A506-1E87-42D6-BCFB-B8C809FA5494}")
	iidIXmlDocumentIO                  = mustGUID("{6CD0E74E-EE65-4489-9EBF-CA43E87BA637}")
	iidIToastNotificationManagerStats  = mustGUID("{50AC103F-D235-4598-BBEF-98FE4D1A3AD4}")
	iidIToastNotificationFactory       = mustGUID("{04124B20-82C6-4229-B109-FD9ED4662B53}")
	iidIToastNotification2             = mustGUID("{9DFB9FD1-143A-490E-90BF-B9FBA7132DE7}")
	activatorCLSID                     = mustGUID(toastActivatorCLSID)
)

// Method places in the tables.
const (
	methodQueryInterface = 0
	methodRelease        = 2
	// IXmlDocumentIO.LoadXml(HSTRING)
	methodLoadXML = 6
	// IToastNotificationManagerStatics.CreateToastNotifierWithId(HSTRING, IToastNotifier**)
	methodCreateToastNotifierWithID = 7
	// IToastNotificationFactory.CreateToastNotification(IXmlDocument*, IToastNotification**)
	methodCreateToastNotification = 6
	// IToastNotification2.put_Tag(HSTRING), put_Group(HSTRING)
	methodPutTag   = 6
	methodPutGroup = 8
	// IToastNotifier.Show(IToastNotification*), get_Setting(NotificationSetting*)
	methodShow       = 6
	methodGetSetting = 8
)

const (
	roInitMultithreaded = 1
	clsctxLocalServer   = 4
	regclsMultipleUse   = 1
	sOK                 = 0
	eNoInterface        = 0x80004002
	classENoAggregation = 0x80040110
)

var (
	combase                    = windows.NewLazySystemDLL("combase.dll")
	procRoInitialize           = combase.NewProc("RoInitialize")
	procRoUninitialize         = combase.NewProc("RoUninitialize")
	procRoActivateInstance     = combase.NewProc("RoActivateInstance")
	procRoGetActivationFactory = combase.NewProc("RoGetActivationFactory")
	procWindowsCreateString    = combase.NewProc("WindowsCreateString")
	procWindowsDeleteString    = combase.NewProc("WindowsDeleteString")
	ole32                      = windows.NewLazySystemDLL("ole32.dll")
	procCoRegisterClassObject  = ole32.NewProc("CoRegisterClassObject")
	procCoRevokeClassObject    = ole32.NewProc("CoRevokeClassObject")
)

func mustGUID(s string) windows.GUID {
	g, err := windows.GUIDFromString(s)
	if err != nil {
		panic("notify: " + err.Error())
	}
	return g
}

// hresult is a failed COM call's result.
type hresult uint32

func (h hresult) Error() string {
	msg := windows.Errno(h).Error()
	if strings.HasPrefix(msg, "winapi error") {
		return fmt.Sprintf("HRESULT 0x%08X", uint32(h))
	}
	return fmt.Sprintf("%s (0x%08X)", msg, uint32(h))
}

// check turns a returned HRESULT into an error; what went wrong says where.
func check(r uintptr, what string) error {
	if int32(r) < 0 {
		return fmt.Errorf("%s: %w", what, hresult(uint32(r)))
	}
	return nil
}

// comObject is an interface pointer: a pointer to its method table. The
// table is shorter than the array type says; only the places above are read.
type comObject struct{ vtbl *[64]uintptr }

func (o *comObject) release() {
	if o != nil {
		_, _, _ = syscall.SyscallN(o.vtbl[methodRelease], uintptr(unsafe.Pointer(o)))
	}
}

// query asks o for another of its interfaces.
func (o *comObject) query(iid *windows.GUID, name string) (*comObject, error) {
	var out *comObject
	r, _, _ := syscall.SyscallN(o.vtbl[methodQueryInterface], uintptr(unsafe.Pointer(o)),
		uintptr(unsafe.Pointer(iid)), uintptr(unsafe.Pointer(&out)))
	if err := check(r, "query "+name); err != nil {
		return nil, err
	}
	return out, nil
}

// hstring is a WinRT string; delete it after the call that takes it.
type hstring uintptr

// newHString makes s a WinRT string. Not go-ole's NewHString: it counts
// runes, not UTF-16 units, and so cuts a string with an emoji short.
func newHString(s string) (hstring, error) {
	u, err := windows.UTF16FromString(s)
	if err != nil {
		return 0, fmt.Errorf("make a WinRT string: %w", err)
	}
	var h hstring
	r, _, _ := procWindowsCreateString.Call(uintptr(unsafe.Pointer(&u[0])), uintptr(len(u)-1), uintptr(unsafe.Pointer(&h)))
	if err := check(r, "make a WinRT string"); err != nil {
		return 0, err
	}
	return h, nil
}

func (h hstring) delete() { _, _, _ = procWindowsDeleteString.Call(uintptr(h)) }

// factory returns the activation factory of class as interface iid.
func factory(class string, iid *windows.GUID) (*comObject, error) {
	h, err := newHString(class)
	if err != nil {
		return nil, err
	}
	defer h.delete()
	var out *comObject
	r, _, _ := procRoGetActivationFactory.Call(uintptr(h), uintptr(unsafe.Pointer(iid)), uintptr(unsafe.Pointer(&out)))
	if err := check(r, "get the factory of "+class); err != nil {
		return nil, err
	}
	return out, nil
}

// instance makes an object of class with its default constructor.
func instance(class string) (*comObject, error) {
	h, err := newHString(class)
	if err != nil {
		return nil, err
	}
	defer h.delete()
	var out *comObject
	r, _, _ := procRoActivateInstance.Call(uintptr(h), uintptr(unsafe.Pointer(&out)))
	if err := check(r, "make a "+class); err != nil {
		return nil, err
	}
	return out, nil
}

// winrt holds what showing toasts takes. Its methods run on one OS thread
// that stays in the multithreaded apartment (see Toasts).
type winrt struct {
	notifier *comObject // IToastNotifier for appID
	toasts   *comObject // IToastNotificationFactory
	cookie   uint32     // the activator's registration; 0 when none
}

// startWinRT joins the calling thread to the multithreaded apartment, makes
// the toast notifier for appID and, when listen, registers the activator.
func startWinRT(appID string, listen bool) (_ *winrt, err error) {
	// S_FALSE, "already in the apartment", is a success too.
	r, _, _ := procRoInitialize.Call(roInitMultithreaded)
	if err := check(r, "start the Windows Runtime"); err != nil {
		return nil, err
	}
	w := &winrt{}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	manager, err := factory("Windows.UI.Notifications.ToastNotificationManager", &iidIToastNotificationManagerStats)
	if err != nil {
		return nil, err
	}
	defer manager.release()
	id, err := newHString(appID)
	if err != nil {
		return nil, err
	}
	defer id.delete()
	r, _, _ = syscall.SyscallN(manager.vtbl[methodCreateToastNotifierWithID], uintptr(unsafe.Pointer(manager)),
		uintptr(id), uintptr(unsafe.Pointer(&w.notifier)))
	if err := check(r, "make the toast notifier"); err != nil {
		return nil, err
	}
	if w.toasts, err = factory("Windows.UI.Notifications.ToastNotification", &iidIToastNotificationFactory); err != nil {
		return nil, err
	}
	if listen {
		r, _, _ := procCoRegisterClassObject.Call(uintptr(unsafe.Pointer(&activatorCLSID)),
			uintptr(unsafe.Pointer(activatorFactory())), clsctxLocalServer, regclsMultipleUse, uintptr(unsafe.Pointer(&w.cookie)))
		if err := check(r, "register the toast activator"); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// setting is Windows' NotificationSetting for Conch: 0 when toasts show.
func (w *winrt) setting() (int32, error) {
	var s int32
	r, _, _ := syscall.SyscallN(w.notifier.vtbl[methodGetSetting], uintptr(unsafe.Pointer(w.notifier)), uintptr(unsafe.Pointer(&s)))
	return s, check(r, "read the notification setting")
}

// show hands t to Windows, replacing the toast with the same tag and group.
func (w *winrt) show(t Toast) error {
	doc, err := instance("Windows.Data.Xml.Dom.XmlDocument")
	if err != nil {
		return err
	}
	defer doc.release()
	io, err := doc.query(&iidIXmlDocumentIO, "IXmlDocumentIO")
	if err != nil {
		return err
	}
	defer io.release()
	content, err := newHString(t.XML)
	if err != nil {
		return err
	}
	defer content.delete()
	r, _, _ := syscall.SyscallN(io.vtbl[methodLoadXML], uintptr(unsafe.Pointer(io)), uintptr(content))
	if err := check(r, "read the toast XML"); err != nil {
		return err
	}
	xdoc, err := doc.query(&iidIXmlDocument, "IXmlDocument")
	if err != nil {
		return err
	}
	defer xdoc.release()
	var toast *comObject
	r, _, _ = syscall.SyscallN(w.toasts.vtbl[methodCreateToastNotification], uintptr(unsafe.Pointer(w.toasts)),
		uintptr(unsafe.Pointer(xdoc)), uintptr(unsafe.Pointer(&toast)))
	if err := check(r, "make the toast"); err != nil {
		return err
	}
	defer toast.release()
	if t.Tag != "" {
		if err := w.label(toast, t.Tag, t.Group); err != nil {
			return err
		}
	}
	r, _, _ = syscall.SyscallN(w.notifier.vtbl[methodShow], uintptr(unsafe.Pointer(w.notifier)), uintptr(unsafe.Pointer(toast)))
	return check(r, "show the toast")
}

// label sets the tag and group that let a later toast replace this one.
func (w *winrt) label(toast *comObject, tag, group string) error {
	t2, err := toast.query(&iidIToastNotification2, "IToastNotification2")
	if err != nil {
		return err
	}
	defer t2.release()
	for _, p := range []struct {
		method int
		value  string
	}{{methodPutTag, tag}, {methodPutGroup, group}} {
		h, err := newHString(p.value)
		if err != nil {
			return err
		}
		r, _, _ := syscall.SyscallN(t2.vtbl[p.method], uintptr(unsafe.Pointer(t2)), uintptr(h))
		h.delete()
		if err := check(r, "tag the toast"); err != nil {
			return err
		}
	}
	return nil
}

// close revokes the activator and releases everything; the thread leaves
// the apartment.
func (w *winrt) close() {
	if w.cookie != 0 {
		_, _, _ = procCoRevokeClassObject.Call(uintptr(w.cookie))
		w.cookie = 0
	}
	w.toasts.release()
	w.notifier.release()
	w.toasts, w.notifier = nil, nil
	_, _, _ = procRoUninitialize.Call()
}

// The activator: a COM class factory and the INotificationActivationCallback
// it hands out, written in Go. Windows calls Activate for a click on a
// toast's body or one of its buttons, in the popup or in the notification
// centre, with that part's arguments. Both objects are made once per
// process and never freed: syscall.NewCallback's callbacks are few and
// never released, and COM may hold the objects until the process ends.

type classFactory struct{ vtbl *classFactoryVtbl }

type classFactoryVtbl struct {
	QueryInterface, AddRef, Release, CreateInstance, LockServer uintptr
}

type activationCallback struct{ vtbl *activationCallbackVtbl }

type activationCallbackVtbl struct {
	QueryInterface, AddRef, Release, Activate uintptr
}

// activation hands clicks to the open Toasts, if any.
var activation atomic.Pointer[clicks]

// activatorFactory makes the activator's objects on first use and returns
// the class factory.
var activatorFactory = sync.OnceValue(func() *classFactory {
	// Neither object counts references: they live as long as the process.
	ref := syscall.NewCallback(func(this unsafe.Pointer) uintptr { return 1 })
	callback := &activationCallback{vtbl: &activationCallbackVtbl{
		QueryInterface: syscall.NewCallback(func(this unsafe.Pointer, iid *windows.GUID, out *unsafe.Pointer) uintptr {
			return answerQuery(this, iid, &iidINotificationActivationCallback, out)
		}),
		AddRef: ref, Release: ref,
		Activate: syscall.NewCallback(activate),
	}}
	return &classFactory{vtbl: &classFactoryVtbl{
		QueryInterface: syscall.NewCallback(func(this unsafe.Pointer, iid *windows.GUID, out *unsafe.Pointer) uintptr {
			return answerQuery(this, iid, &iidIClassFactory, out)
		}),
		AddRef: ref, Release: ref,
		CreateInstance: syscall.NewCallback(func(this, outer unsafe.Pointer, iid *windows.GUID, out *unsafe.Pointer) uintptr {
			if outer != nil {
				*out = nil
				return classENoAggregation
			}
			return answerQuery(unsafe.Pointer(callback), iid, &iidINotificationActivationCallback, out)
		}),
		LockServer: syscall.NewCallback(func(this unsafe.Pointer, lock uintptr) uintptr { return sOK }),
	}}
})

// answerQuery hands out obj when asked for IUnknown or its own interface.
func answerQuery(obj unsafe.Pointer, iid, own *windows.GUID, out *unsafe.Pointer) uintptr {
	if *iid != iidIUnknown && *iid != *own {
		*out = nil
		return eNoInterface
	}
	*out = obj
	return sOK
}

// activate is INotificationActivationCallback.Activate(appUserModelId,
// invokedArgs, data, count). It returns at once: Windows waits on it, and
// answering a question writes to the store.
func activate(this unsafe.Pointer, appID, args *uint16, data, count uintptr) uintptr {
	tag, action, ok := ParseToastArgs(windows.UTF16PtrToString(args))
	if c := activation.Load(); ok && c != nil {
		go c.deliver(tag, action)
	}
	return sOK
}
