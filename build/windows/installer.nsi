; Conch's Windows installer: per user (no administrator), into
; %LOCALAPPDATA%\Programs\Conch, with a Start-menu shortcut, the notification
; identity the toasts need, an entry in Settings > Apps and an uninstaller
; that takes all of it away again, but never the person's %USERPROFILE%\.conch.
;
; `make dist-windows` builds it with makensis (Debian's nsis, or NSIS on
; Windows), defining:
;   VERSION       the version, as scripts/version prints it (0.1.0+3.1a2b3c4d)
;   VERSION_BASE  its X.Y.Z (Windows' version resource takes numbers only)
;   EXE           the conch.exe to install (built with -H windowsgui)
;   OUTFILE       where the installer goes (build/dist/conch-VERSION-setup.exe)
;   APP_ID        the toasts' AppUserModelID (notify.ToastAppID)
;   TOAST_CLSID   the toast activator's CLSID (notify's toastActivatorCLSID)
;   WEBVIEW2_BOOTSTRAPPER (optional) Microsoft's evergreen WebView2
;                 bootstrapper, MicrosoftEdgeWebview2Setup.exe, to embed; without
;                 it the installer downloads it, only when WebView2 is missing.

; Conch is built for amd64 only, and so is its installer: a 64-bit one also
; runs under a wine64 without 32-bit support, as the test does. (NSIS's own
; Windows builds lack the amd64 stubs; Debian's and Ubuntu's nsis have them.)
Target amd64-unicode
ManifestDPIAware true
SetCompressor /SOLID lzma
RequestExecutionLevel user

!include "MUI2.nsh"
!include "LogicLib.nsh"
!include "FileFunc.nsh"

!define PRODUCT "Conch"
!define PUBLISHER "Conch"
!define UNINST_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\${APP_ID}"
!define AUMID_KEY "Software\Classes\AppUserModelId\${APP_ID}"
!define CLSID_KEY "Software\Classes\CLSID\${TOAST_CLSID}"
!define SHORTCUT "$SMPROGRAMS\${PRODUCT}.lnk"
; Microsoft's id for the WebView2 Runtime, under EdgeUpdate\Clients, and the
; evergreen bootstrapper's permanent link.
!define WEBVIEW2_GUID "{F3017226-FE2A-4295-8BDF-00C3A9A7E4C5}"
!define WEBVIEW2_URL "https://go.microsoft.com/fwlink/p/?LinkId=2124703"

Name "${PRODUCT}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\${PRODUCT}"
InstallDirRegKey HKCU "${UNINST_KEY}" "InstallLocation"
BrandingText "${PRODUCT} ${VERSION}"

VIProductVersion "${VERSION_BASE}.0"
VIFileVersion "${VERSION_BASE}.0"
VIAddVersionKey "ProductName" "${PRODUCT}"
VIAddVersionKey "CompanyName" "${PUBLISHER}"
VIAddVersionKey "FileDescription" "${PRODUCT} installer"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "LegalCopyright" "${PUBLISHER}"

!define MUI_ICON "icon.ico"
!define MUI_UNICON "icon.ico"
!define MUI_ABORTWARNING
!define MUI_FINISHPAGE_RUN "$INSTDIR\conch.exe"
!define MUI_FINISHPAGE_RUN_TEXT "Start ${PRODUCT}"
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

; SetShortcutAppID LINK APPID: stamps the shortcut with the AppUserModelID, as
; Windows asks of an app whose toasts name one (NSIS has no command for it,
; and Debian's NSIS lacks the WinShell plug-in): the shell link's
; IPropertyStore, PKEY_AppUserModel_ID, saved through its IPersistFile.
!macro SetShortcutAppID LINK APPID
	Push $0
	Push $1
	Push $2
	Push $3
	Push $4
	Push $5
	System::Call "ole32::CoCreateInstance(g '{00021401-0000-0000-C000-000000000046}', p 0, i 1, g '{000214F9-0000-0000-C000-000000000046}', *p .r1) i .r0"
	${If} $0 == 0
		System::Call "$1->0(g '{0000010b-0000-0000-C000-000000000046}', *p .r2) i .r0" ; IPersistFile
		${If} $0 == 0
			System::Call "$2->5(w '${LINK}', i 2) i .r0" ; Load, read-write
			${If} $0 == 0
				System::Call "$1->0(g '{886D8EEB-8CF2-4446-8D02-CDBA1DBDCF99}', *p .r3) i .r0" ; IPropertyStore
				${If} $0 == 0
					System::Call "*(g '{9F4C2855-9F79-4B39-A8D0-E1D42DE1D5F3}', i 5) p .r4" ; PKEY_AppUserModel_ID
					System::Call "*(&w64 '${APPID}') p .r5"
					; A PROPVARIANT of VT_LPWSTR (31) pointing at the id.
					System::Call "*(&i2 31, &i2 0, &i2 0, &i2 0, p r5, p 0) p .r0"
					System::Call "$3->6(p r4, p r0) i .r5" ; SetValue
					${If} $5 == 0
						System::Call "$3->7() i .r5" ; Commit
					${EndIf}
					System::Free $0
					System::Free $4
					${If} $5 == 0
						System::Call "$2->6(p 0, i 1) i .r5" ; Save
					${EndIf}
					${If} $5 != 0
						DetailPrint "Could not set the shortcut's AppUserModelID (error $5)"
					${EndIf}
					System::Call "$3->2()"
				${EndIf}
			${EndIf}
			System::Call "$2->2()"
		${EndIf}
		System::Call "$1->2()"
	${EndIf}
	Pop $5
	Pop $4
	Pop $3
	Pop $2
	Pop $1
	Pop $0
!macroend

; Is the WebView2 Runtime there, for all users or for this one? Microsoft's
; check: a version (pv) under EdgeUpdate\Clients that is neither empty nor 0.0.0.0.
Function HasWebView2
	ReadRegStr $0 HKLM "SOFTWARE\WOW6432Node\Microsoft\EdgeUpdate\Clients\${WEBVIEW2_GUID}" "pv"
	${If} $0 == ""
	${OrIf} $0 == "0.0.0.0"
		ReadRegStr $0 HKLM "SOFTWARE\Microsoft\EdgeUpdate\Clients\${WEBVIEW2_GUID}" "pv"
	${EndIf}
	${If} $0 == ""
	${OrIf} $0 == "0.0.0.0"
		ReadRegStr $0 HKCU "Software\Microsoft\EdgeUpdate\Clients\${WEBVIEW2_GUID}" "pv"
	${EndIf}
	${If} $0 == "0.0.0.0"
		StrCpy $0 ""
	${EndIf}
FunctionEnd

; The WebView2 step, as Wails' own installer does it: when the runtime is
; missing, run Microsoft's evergreen bootstrapper with /silent /install. The
; bootstrapper is embedded when the build had one, else fetched now. Without
; it Conch still installs; its window then asks for WebView2 when it starts.
Function WebView2
	Call HasWebView2
	${If} $0 != ""
		DetailPrint "WebView2 Runtime $0 is installed"
		Return
	${EndIf}
	InitPluginsDir
	StrCpy $1 "$PLUGINSDIR\MicrosoftEdgeWebview2Setup.exe"
!ifdef WEBVIEW2_BOOTSTRAPPER
	SetOutPath "$PLUGINSDIR"
	File "/oname=MicrosoftEdgeWebview2Setup.exe" "${WEBVIEW2_BOOTSTRAPPER}"
!else
	DetailPrint "Downloading the WebView2 Runtime's installer"
	System::Call "urlmon::URLDownloadToFileW(p 0, w '${WEBVIEW2_URL}', w r1, i 0, p 0) i .r0"
	${If} $0 != 0
		DetailPrint "Could not download the WebView2 Runtime (error $0): install it from https://developer.microsoft.com/microsoft-edge/webview2/"
		Return
	${EndIf}
!endif
	DetailPrint "Installing the WebView2 Runtime"
	ExecWait '"$1" /silent /install' $0
	${If} $0 != 0
		DetailPrint "The WebView2 Runtime's installer failed (exit $0)"
	${EndIf}
FunctionEnd

Section "Conch" SecMain
	SetShellVarContext current
	SetOutPath "$INSTDIR"
	File "/oname=conch.exe" "${EXE}"
	File "/oname=conch.ico" "icon.ico"
	File "/oname=conch.png" "../../backend/desktop/appicon.png"
	WriteUninstaller "$INSTDIR\uninstall.exe"

	CreateShortcut "${SHORTCUT}" "$INSTDIR\conch.exe" "" "$INSTDIR\conch.ico" 0
	!insertmacro SetShortcutAppID "${SHORTCUT}" "${APP_ID}"

	; The toasts' identity and activator, as Conch itself writes them at start
	; (backend/notify): a click on a toast then reaches or starts Conch.
	WriteRegStr HKCU "${AUMID_KEY}" "DisplayName" "${PRODUCT}"
	WriteRegStr HKCU "${AUMID_KEY}" "IconUri" "$INSTDIR\conch.png"
	WriteRegStr HKCU "${AUMID_KEY}" "CustomActivator" "${TOAST_CLSID}"
	WriteRegStr HKCU "${CLSID_KEY}" "" "Conch notifications"
	WriteRegStr HKCU "${CLSID_KEY}\LocalServer32" "" '"$INSTDIR\conch.exe"'

	WriteRegStr HKCU "${UNINST_KEY}" "DisplayName" "${PRODUCT}"
	WriteRegStr HKCU "${UNINST_KEY}" "DisplayVersion" "${VERSION}"
	WriteRegStr HKCU "${UNINST_KEY}" "Publisher" "${PUBLISHER}"
	WriteRegStr HKCU "${UNINST_KEY}" "DisplayIcon" "$INSTDIR\conch.ico"
	WriteRegStr HKCU "${UNINST_KEY}" "InstallLocation" "$INSTDIR"
	WriteRegStr HKCU "${UNINST_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
	WriteRegStr HKCU "${UNINST_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
	WriteRegDWORD HKCU "${UNINST_KEY}" "NoModify" 1
	WriteRegDWORD HKCU "${UNINST_KEY}" "NoRepair" 1
	${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
	IntFmt $0 "0x%08X" $0
	WriteRegDWORD HKCU "${UNINST_KEY}" "EstimatedSize" "$0"

	Call WebView2
SectionEnd

; Everything the installer put down, and what Conch wrote in the registry
; for its toasts; never the home (%USERPROFILE%\.conch) with the person's
; tasks, chats and keys.
Section "Uninstall"
	SetShellVarContext current
	Delete "${SHORTCUT}"
	Delete "$INSTDIR\conch.exe"
	Delete "$INSTDIR\conch.ico"
	Delete "$INSTDIR\conch.png"
	Delete "$INSTDIR\uninstall.exe"
	RMDir "$INSTDIR"
	DeleteRegKey HKCU "${AUMID_KEY}"
	DeleteRegKey HKCU "${CLSID_KEY}"
	DeleteRegKey HKCU "${UNINST_KEY}"
SectionEnd
