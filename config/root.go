package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FindRoot returns the app folder of this process, the folder that holds
// the app's config folder and that relative paths of its configuration
// (the sqlite:// default var/app.db) are relative to:
//
//  1. APP_ROOT, when it is set: a folder, made absolute;
//  2. else the working directory, when it holds config/ or go.mod;
//  3. else the folder of the running binary (symbolic links followed),
//     when it holds config/ or go.mod.
//
// With none of them it fails, saying to run the app from its folder or
// to set APP_ROOT: running a binary from another folder must not create
// a new, empty database there.
func FindRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("config: the app folder: %w", err)
	}
	exe, err := os.Executable()
	if err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
	}
	return findRoot(os.Getenv("APP_ROOT"), wd, filepath.Dir(exe))
}

// findRoot is FindRoot given APP_ROOT's value, the working directory and
// the binary's folder.
func findRoot(env, wd, exeDir string) (string, error) {
	if env != "" {
		root := filepath.Clean(env)
		if !filepath.IsAbs(root) {
			root = filepath.Join(wd, root)
		}
		const want = "set it to the app's folder, the one that holds config/"
		switch info, err := os.Stat(root); {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("config: APP_ROOT is %s, which does not exist: %s", root, want)
		case err != nil:
			return "", fmt.Errorf("config: APP_ROOT is %s: %w", root, err)
		case !info.IsDir():
			return "", fmt.Errorf("config: APP_ROOT is %s, which is a file: %s", root, want)
		}
		return root, nil
	}
	for _, dir := range []string{wd, exeDir} {
		if holdsApp(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("config: no app folder: neither the working directory (%s) nor the binary's folder (%s) holds config/ or go.mod; "+
		"run the app from its folder, or set APP_ROOT to it", wd, exeDir)
}

// holdsApp reports whether dir holds a config folder or a go.mod.
func holdsApp(dir string) bool {
	if info, err := os.Stat(filepath.Join(dir, "config")); err == nil && info.IsDir() {
		return true
	}
	info, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil && !info.IsDir()
}
