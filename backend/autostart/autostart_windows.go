package autostart

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// runKey is where Windows finds what to start at the current user's login.
const runKey = `Software\Microsoft\Windows\CurrentVersion\Run`

// valueName is Conch's value under runKey.
const valueName = "Conch"

// Path names the registry value the setting lives in.
func (l Login) Path() (string, error) { return `HKCU\` + runKey + `\` + valueName, nil }

// Enabled says whether the Run value is there.
func (l Login) Enabled() (bool, error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKey, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open the Run key: %w", err)
	}
	defer k.Close()
	_, _, err = k.GetStringValue(valueName)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Set writes the Run value that starts Exe (on) or deletes it (off).
func (l Login) Set(on bool) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("open the Run key: %w", err)
	}
	defer k.Close()
	if !on {
		if err := k.DeleteValue(valueName); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("remove the Run value: %w", err)
		}
		return nil
	}
	if l.Exe == "" {
		return errors.New("open at login: which conch to start is not known")
	}
	if err := k.SetStringValue(valueName, `"`+l.Exe+`"`); err != nil {
		return fmt.Errorf("write the Run value: %w", err)
	}
	return nil
}
