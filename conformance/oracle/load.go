package main

// Reading a cluster dump the way `vpolicy dry-run --cluster` does: YAML or JSON files, multi-document
// streams, `kind: List` wrappers, gzip, folders and stdin. Only the kinds Volcano's scheduler cache
// consumes are kept; a ConfigMap holding `volcano-scheduler.conf` supplies the conf when none is given.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	nodeinfov1alpha1 "volcano.sh/apis/pkg/apis/nodeinfo/v1alpha1"
	vcv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

const confKey = "volcano-scheduler.conf"

// cluster holds the objects of one dump, in the order they were read.
type cluster struct {
	Nodes          []*v1.Node
	Pods           []*v1.Pod
	PodGroups      []*vcv1beta1.PodGroup
	Queues         []*vcv1beta1.Queue
	PriorityClass  []*schedulingv1.PriorityClass
	ResourceQuotas []*v1.ResourceQuota
	// what plugins read beside the cache's own objects (extra_objects.go)
	PDBs           []*policyv1.PodDisruptionBudget
	Numatopologies []*nodeinfov1alpha1.Numatopology
	PVs            []*v1.PersistentVolume
	PVCs           []*v1.PersistentVolumeClaim
	StorageClasses []*storagev1.StorageClass
	CSINodes       []*storagev1.CSINode
	Conf           string // from a ConfigMap in the dump; empty when there is none
}

type typeMeta struct {
	Kind       string            `json:"kind"`
	APIVersion string            `json:"apiVersion"`
	Items      []json.RawMessage `json:"items"`
}

// readPaths loads every file named (a folder: its *.yaml, *.yml, *.json, and their .gz forms).
func readPaths(paths []string) (*cluster, error) {
	c := &cluster{}
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(os.Stdin)
			if err != nil {
				return nil, fmt.Errorf("-: %v", err)
			}
			if err := c.addStream("-", data); err != nil {
				return nil, err
			}
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", p, err)
		}
		files := []string{p}
		if info.IsDir() {
			files = nil
			err := filepath.WalkDir(p, func(f string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				name := strings.TrimSuffix(d.Name(), ".gz")
				if !d.IsDir() && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")) {
					files = append(files, f)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p, err)
			}
			sort.Strings(files)
		}
		for _, f := range files {
			data, err := readFile(f)
			if err != nil {
				return nil, err
			}
			if err := c.addStream(f, data); err != nil {
				return nil, err
			}
		}
	}
	c.fillIdentity()
	return c, nil
}

func readFile(f string) ([]byte, error) {
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", f, err)
	}
	if strings.HasSuffix(f, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
		defer zr.Close()
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
	}
	return data, nil
}

// addStream decodes one multi-document YAML or JSON stream.
func (c *cluster) addStream(name string, data []byte) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 1; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("%s: document %d: %v", name, i, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := c.addObject(fmt.Sprintf("%s: document %d", name, i), raw); err != nil {
			return err
		}
	}
}

func (c *cluster) addObject(where string, raw json.RawMessage) error {
	var tm typeMeta
	if err := json.Unmarshal(raw, &tm); err != nil {
		return fmt.Errorf("%s: %v", where, err)
	}
	decode := func(into interface{}) error {
		if err := json.Unmarshal(raw, into); err != nil {
			return fmt.Errorf("%s: %s: %v", where, tm.Kind, err)
		}
		return nil
	}
	group := tm.APIVersion
	if i := strings.Index(group, "/"); i >= 0 {
		group = group[:i]
	} else {
		group = ""
	}
	switch {
	case strings.HasSuffix(tm.Kind, "List"):
		for j, item := range tm.Items {
			if err := c.addObject(fmt.Sprintf("%s item %d", where, j), item); err != nil {
				return err
			}
		}
	case tm.Kind == "Node" && group == "":
		o := &v1.Node{}
		if err := decode(o); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, o)
	case tm.Kind == "Pod" && group == "":
		o := &v1.Pod{}
		if err := decode(o); err != nil {
			return err
		}
		c.Pods = append(c.Pods, o)
	case tm.Kind == "PodGroup" && group == "scheduling.volcano.sh":
		o := &vcv1beta1.PodGroup{}
		if err := decode(o); err != nil {
			return err
		}
		c.PodGroups = append(c.PodGroups, o)
	case tm.Kind == "Queue" && group == "scheduling.volcano.sh":
		o := &vcv1beta1.Queue{}
		if err := decode(o); err != nil {
			return err
		}
		c.Queues = append(c.Queues, o)
	case tm.Kind == "PriorityClass" && group == "scheduling.k8s.io":
		o := &schedulingv1.PriorityClass{}
		if err := decode(o); err != nil {
			return err
		}
		c.PriorityClass = append(c.PriorityClass, o)
	case tm.Kind == "ResourceQuota" && group == "":
		o := &v1.ResourceQuota{}
		if err := decode(o); err != nil {
			return err
		}
		c.ResourceQuotas = append(c.ResourceQuotas, o)
	case tm.Kind == "PodDisruptionBudget" && group == "policy":
		o := &policyv1.PodDisruptionBudget{}
		if err := decode(o); err != nil {
			return err
		}
		c.PDBs = append(c.PDBs, o)
	case tm.Kind == "Numatopology" && group == "nodeinfo.volcano.sh":
		o := &nodeinfov1alpha1.Numatopology{}
		if err := decode(o); err != nil {
			return err
		}
		c.Numatopologies = append(c.Numatopologies, o)
	case tm.Kind == "PersistentVolume" && group == "":
		o := &v1.PersistentVolume{}
		if err := decode(o); err != nil {
			return err
		}
		c.PVs = append(c.PVs, o)
	case tm.Kind == "PersistentVolumeClaim" && group == "":
		o := &v1.PersistentVolumeClaim{}
		if err := decode(o); err != nil {
			return err
		}
		if o.Namespace == "" {
			o.Namespace = "default"
		}
		c.PVCs = append(c.PVCs, o)
	case tm.Kind == "StorageClass" && group == "storage.k8s.io":
		o := &storagev1.StorageClass{}
		if err := decode(o); err != nil {
			return err
		}
		c.StorageClasses = append(c.StorageClasses, o)
	case tm.Kind == "CSINode" && group == "storage.k8s.io":
		o := &storagev1.CSINode{}
		if err := decode(o); err != nil {
			return err
		}
		c.CSINodes = append(c.CSINodes, o)
	case tm.Kind == "ConfigMap" && group == "":
		o := &v1.ConfigMap{}
		if err := decode(o); err != nil {
			return err
		}
		if s, ok := o.Data[confKey]; ok {
			c.Conf = s
		}
	default:
		// Namespaces, vcjobs and the rest: nothing Volcano's session reads from them here.
	}
	return nil
}

// fillIdentity gives every object without one the uid `kubectl` would never omit but hand-written
// dumps do: the cache keys tasks and jobs by uid, so two pods without one would collapse into one.
func (c *cluster) fillIdentity() {
	for _, p := range c.Pods {
		if p.UID == "" {
			p.UID = types.UID(p.Namespace + "/" + p.Name)
		}
		if p.Namespace == "" {
			p.Namespace = "default"
		}
	}
	for _, pg := range c.PodGroups {
		if pg.Namespace == "" {
			pg.Namespace = "default"
		}
		if pg.UID == "" {
			pg.UID = types.UID(pg.Namespace + "/" + pg.Name)
		}
	}
	for _, n := range c.Nodes {
		if n.UID == "" {
			n.UID = types.UID(n.Name)
		}
	}
	for _, q := range c.Queues {
		if q.UID == "" {
			q.UID = types.UID(q.Name)
		}
	}
}

// confText reads a conf file: the conf itself, or a ConfigMap that holds it.
func confText(path string) (string, error) {
	data, err := readFile(path)
	if err != nil {
		return "", err
	}
	var tm typeMeta
	var raw json.RawMessage
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(&raw); err == nil {
		if json.Unmarshal(raw, &tm) == nil && tm.Kind == "ConfigMap" {
			cm := &v1.ConfigMap{}
			if err := json.Unmarshal(raw, cm); err != nil {
				return "", fmt.Errorf("%s: %v", path, err)
			}
			s, ok := cm.Data[confKey]
			if !ok {
				return "", fmt.Errorf("%s: ConfigMap has no %q key", path, confKey)
			}
			return s, nil
		}
	}
	return string(data), nil
}
