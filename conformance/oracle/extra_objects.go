package main

// What plugins read beside the cache's jobs, nodes and queues, given to Volcano the way its own code
// would see them:
//   - PodDisruptionBudgets: the pdb plugin lists them from the cache's informer factory
//     (ssn.InformerFactory().Policy().V1().PodDisruptionBudgets().Lister()); they go into that informer's
//     store, as Volcano's pdb_test.go puts them there.
//   - Numatopologies: the cache's own event handler (AddNumaInfoV1alpha1) turns each into the node's
//     NumaInfo, as its Numatopology informer would.
//   - PersistentVolumes, claims, StorageClasses and CSINodes: the predicates plugin's VolumeZone and
//     NodeVolumeLimits read them through listers of the same factory, and the cache's volume binder
//     (statement.Allocate -> GetPodVolumes / AllocateVolumes) through assume caches that only informer
//     events fill. So they are created in the cache's fake clientset and the factory is started, as
//     vc-scheduler starts it, then stopped once the session is over.

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	vccache "volcano.sh/volcano/pkg/scheduler/cache"
)

// addVolumeObjects creates the cluster's volume objects in the cache's fake clientset and starts the
// informer factory, before any pod is added: the cache counts a pod's CSI volumes when the pod arrives
// (through the claim lister), and fails the pod's task when its claim is missing. The returned function
// stops the informers (a no-op when it started none).
func addVolumeObjects(sc *vccache.SchedulerCache, c *cluster) (func(), error) {
	if len(c.PVs)+len(c.PVCs)+len(c.StorageClasses)+len(c.CSINodes) == 0 {
		return func() {}, nil
	}
	client, ctx := sc.Client(), context.TODO()
	create := metav1.CreateOptions{}
	// the volume binder's assume caches parse every object's resourceVersion; the fake clientset
	// stores what it is given
	version := func(m *metav1.ObjectMeta) {
		if m.ResourceVersion == "" {
			m.ResourceVersion = "1"
		}
	}
	for _, o := range c.StorageClasses {
		version(&o.ObjectMeta)
		if _, err := client.StorageV1().StorageClasses().Create(ctx, o, create); err != nil {
			return nil, fmt.Errorf("StorageClass %s: %v", o.Name, err)
		}
	}
	for _, o := range c.CSINodes {
		version(&o.ObjectMeta)
		if _, err := client.StorageV1().CSINodes().Create(ctx, o, create); err != nil {
			return nil, fmt.Errorf("CSINode %s: %v", o.Name, err)
		}
	}
	for _, o := range c.PVs {
		version(&o.ObjectMeta)
		if _, err := client.CoreV1().PersistentVolumes().Create(ctx, o, create); err != nil {
			return nil, fmt.Errorf("PersistentVolume %s: %v", o.Name, err)
		}
	}
	for _, o := range c.PVCs {
		version(&o.ObjectMeta)
		if _, err := client.CoreV1().PersistentVolumeClaims(o.Namespace).Create(ctx, o, create); err != nil {
			return nil, fmt.Errorf("PersistentVolumeClaim %s/%s: %v", o.Namespace, o.Name, err)
		}
	}
	factory := sc.SharedInformerFactory()
	informers := []cache.SharedIndexInformer{
		factory.Core().V1().PersistentVolumes().Informer(), factory.Core().V1().PersistentVolumeClaims().Informer(),
		factory.Storage().V1().StorageClasses().Informer(), factory.Storage().V1().CSINodes().Informer(),
	}
	// Our own handlers on the informers the volume binder's assume caches listen to: once each has seen
	// every object, the binder's handlers (served by the same informer, in the same order) have been
	// handed them too.
	pvSeen, pvcSeen := watchCount(informers[0]), watchCount(informers[1])
	stop := make(chan struct{})
	factory.Start(stop)
	deadline := time.Now().Add(5 * time.Second)
	for !synced(informers) || pvSeen() < len(c.PVs) || pvcSeen() < len(c.PVCs) {
		if time.Now().After(deadline) {
			close(stop)
			return nil, fmt.Errorf("informers did not deliver the %d PersistentVolumes and %d claims",
				len(c.PVs), len(c.PVCs))
		}
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(time.Millisecond) // the binder's own listeners run beside ours
	return func() { close(stop) }, nil
}

// addPluginObjects gives the pdb and numa-aware plugins their objects, once the nodes are in the cache.
func addPluginObjects(sc *vccache.SchedulerCache, c *cluster) error {
	pdbStore := sc.SharedInformerFactory().Policy().V1().PodDisruptionBudgets().Informer().GetStore()
	for _, pdb := range c.PDBs {
		if err := pdbStore.Add(pdb); err != nil {
			return fmt.Errorf("PodDisruptionBudget %s/%s: %v", pdb.Namespace, pdb.Name, err)
		}
	}
	for _, topo := range c.Numatopologies {
		sc.AddNumaInfoV1alpha1(topo)
	}
	return nil
}

func synced(informers []cache.SharedIndexInformer) bool {
	for _, i := range informers {
		if !i.HasSynced() {
			return false
		}
	}
	return true
}

// watchCount registers a handler counting the objects an informer delivers.
func watchCount(informer cache.SharedIndexInformer) func() int {
	seen := make(chan struct{}, 1<<16)
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(interface{}) { seen <- struct{}{} },
	})
	return func() int { return len(seen) }
}

// refreshImageStates adds every node holding images once more, after all of them: the cache's
// addNodeImageStates copies each image's holder count into the node's summary when the node is added,
// so a node added before the other holders of its images would score them as rarer than they are. In a
// live cluster each node's status updates re-add it, so its summaries count every holder, as
// kube-scheduler's do.
func refreshImageStates(sc *vccache.SchedulerCache, c *cluster) error {
	for _, n := range c.Nodes {
		if len(n.Status.Images) == 0 {
			continue
		}
		usage := sc.Nodes[n.Name].ResourceUsage
		if err := sc.AddOrUpdateNode(n); err != nil {
			return fmt.Errorf("node %s: %v", n.Name, err)
		}
		sc.Nodes[n.Name].ResourceUsage = usage
	}
	return nil
}
